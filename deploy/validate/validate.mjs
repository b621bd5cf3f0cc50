// Validates clickd's Kubernetes manifests offline, with no cluster:
//
//   node validate.mjs DIR [--clickd=PATH] [--nats_server=PATH]
//
// 1. Schema: every object in DIR/*.yaml against the Kubernetes OpenAPI schema
//    of its apiVersion/kind (npm kubernetes-models; the Prometheus operator's
//    CRDs from @kubernetes-models/prometheus-operator). Unknown kinds fail.
// 2. Consistency, which no schema sees: selectors match the pod labels;
//    Service target ports, probe ports and PodMonitor ports are container
//    ports; mounts have volumes; the config file and the ConfigMap key exist;
//    the grace period covers --shutdown_grace_seconds, preStop and the final
//    snapshot; non-root, resources, gRPC probes; kustomization lists every file;
//    every ConfigMap and Secret a pod mounts is in the set; every workload
//    has a PodDisruptionBudget of maxUnavailable 1.
//    Security (docs/security.md): gRPC over TLS with authentication unless it
//    listens on loopback only; every TLS and auth file in a mounted Secret;
//    the probes on the plaintext --health_address; a NetworkPolicy that
//    selects the pods and admits each port only from labelled peers.
//    Replication (--replication=jetstream, docs/replication.md): the NATS
//    StatefulSet's nats.conf (its ConfigMap) listens on the container's
//    client, cluster and monitor ports, routes to exactly its own pods
//    through its headless governing Service, stores JetStream on its volume
//    and carries clickd's largest request (--max_message_bytes <
//    max_payload); clickd's --nats_url names every NATS pod on the client
//    port; only clickd's pods reach the client port, only NATS pods the
//    routes, and --nats_replicas fits the cluster.
// 3. With --clickd: every flag in the container's args is one the binary
//    knows (or is listed in --undefok, reported as pending), and the real
//    clickd starts with the ConfigMap's models.json and serves its models.
//    With --nats_server: the real nats-server accepts the ConfigMap's
//    nats.conf (`nats-server -t`), and rejects a broken copy of it.
// 4. Broken copies of the manifests (BREAKAGES below) must fail 1 and 2.
//
// Exit status 0 when all of that holds, 1 otherwise (one line per problem).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import yaml from 'js-yaml';

// Seconds of the final snapshot that terminationGracePeriodSeconds must leave
// room for on top of preStop and --shutdown_grace_seconds.
const SNAPSHOT_BUDGET_SECONDS = 60;
const DATA_DIR = '/var/lib/clickd';
const GRPC_PORT = 50051;
const METRICS_PORT = 9464;
const ADMIN_PORT = 50052;
const HEALTH_PORT = 50053;
// The NATS servers' ports (nats-statefulset.yaml) and the payload limit the
// replicated log needs (docs/replication.md).
const NATS_PORTS = { client: 4222, cluster: 6222, monitor: 8222 };
const NATS_MAX_PAYLOAD = 8 * 1024 * 1024;
// clickd's --nats_min_server_version default (2.15.0) as major*1e6+minor*1e3+patch.
const NATS_MIN_VERSION = 2015000;
// The ports a NetworkPolicy must admit, by container.
const ADMITTED_PORTS = { clickd: ['grpc', 'grpc-admin', 'metrics'], nats: ['client', 'cluster', 'monitor'] };
// The flags naming files that must come from a mounted Secret.
const SECRET_FILE_FLAGS = ['tls_cert_file', 'tls_key_file', 'tls_client_ca_file', 'auth_tokens_file',
  'auth_cert_roles_file'];

// Returns the model class for an object, or throws.
async function modelClass(obj) {
  const apiVersion = obj.apiVersion ?? '';
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  let module;
  if (group === 'monitoring.coreos.com') {
    module = await import(`@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}`);
  } else {
    module = await import(group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`);
  }
  const cls = module[obj.kind];
  if (typeof cls !== 'function') throw new Error(`no schema for ${apiVersion} ${obj.kind}`);
  return cls;
}

function loadDir(dir) {
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort();
  const docs = [];
  for (const file of files) {
    const text = readFileSync(join(dir, file), 'utf8');
    yaml.loadAll(text, (doc) => { if (doc != null) docs.push({ file, obj: doc }); });
  }
  return { files, docs };
}

const labelsMatch = (selector, labels) =>
  Object.entries(selector ?? {}).every(([k, v]) => (labels ?? {})[k] === v);
const nameOf = ({ file, obj }) => `${file}: ${obj.kind}/${obj.metadata?.name}`;

// Parses ["--a=1", "--b"] into Map { a => "1", b => "true" }.
function parseFlags(args) {
  const flags = new Map();
  for (const arg of args ?? []) {
    const m = /^--?([A-Za-z0-9_]+)(?:=(.*))?$/.exec(arg);
    if (m) flags.set(m[1], m[2] ?? 'true');
  }
  return flags;
}

async function checkSchemas(docs, errors) {
  for (const doc of docs) {
    if (doc.obj.kind === 'Kustomization') continue;
    try {
      const Cls = await modelClass(doc.obj);
      new Cls(doc.obj).validate();
    } catch (e) {
      errors.push(`${nameOf(doc)}: ${e.message}`);
    }
  }
}

function checkKustomization(files, docs, errors) {
  const k = docs.find((d) => d.obj.kind === 'Kustomization');
  if (!k) return;
  const listed = new Set(k.obj.resources ?? []);
  for (const f of files) {
    if (f !== k.file && !listed.has(f)) errors.push(`${k.file}: resources does not list ${f}`);
  }
  for (const f of listed) {
    if (!files.includes(f)) errors.push(`${k.file}: lists ${f}, which does not exist`);
  }
}

const findNamed = (byKind, kind, name) => (byKind[kind] ?? []).find((d) => d.obj.metadata?.name === name);
const containerPorts = (w) => (w.obj.spec.template.spec.containers ?? []).flatMap((c) => c.ports ?? []);
const hasContainer = (w, name) => (w.obj.spec?.template?.spec?.containers ?? []).some((c) => c.name === name);

// Resolves PATH in container c to the key of a mounted ConfigMap or Secret
// (kind) of these manifests: { obj, source, key, problem }, problem '' when
// the key is there.
function mountedFile(pod, c, path, kind, byKind) {
  const mount = (c.volumeMounts ?? []).find((m) => path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
  const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
  const source = kind === 'ConfigMap' ? volume?.configMap?.name : volume?.secret?.secretName;
  const obj = findNamed(byKind, kind, source)?.obj;
  const key = mount ? path.slice(mount.mountPath.replace(/\/$/, '').length + 1) : '';
  const keys = { ...(obj?.data ?? {}), ...(obj?.stringData ?? {}) };
  let problem = '';
  if (!obj) problem = `${path} is not in a mounted ${kind} of these manifests`;
  else if (!(key in keys)) problem = `${kind} ${source} has no key ${key} for ${path}`;
  return { obj, source, key, text: keys[key], problem };
}

// What every workload needs: selector, non-root, resources, mounts, probes,
// the ConfigMaps and Secrets it mounts; then its clickd or NATS specifics.
function checkPodSpec(doc, byKind, errors) {
  const where = nameOf(doc);
  const spec = doc.obj.spec;
  const pod = spec.template?.spec ?? {};
  const podLabels = spec.template?.metadata?.labels ?? {};
  if (!labelsMatch(spec.selector?.matchLabels, podLabels)) {
    errors.push(`${where}: selector does not match the pod template's labels`);
  }
  const sc = pod.securityContext ?? {};
  if (sc.runAsNonRoot !== true) errors.push(`${where}: pod securityContext.runAsNonRoot is not true`);
  if (!(sc.runAsUser > 0)) errors.push(`${where}: pod securityContext.runAsUser is not a non-root uid`);
  const volumes = new Set([...(pod.volumes ?? []).map((v) => v.name),
    ...(spec.volumeClaimTemplates ?? []).map((v) => v.metadata?.name)]);
  for (const v of pod.volumes ?? []) {
    if (v.configMap && !findNamed(byKind, 'ConfigMap', v.configMap.name)) {
      errors.push(`${where}: volume ${v.name}: ConfigMap ${v.configMap.name} is not in these manifests`);
    }
    if (v.secret && !findNamed(byKind, 'Secret', v.secret.secretName)) {
      errors.push(`${where}: volume ${v.name}: Secret ${v.secret.secretName} is not in these manifests`);
    }
  }
  for (const c of pod.containers ?? []) {
    const cw = `${where} container ${c.name}`;
    const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
    const portNumbers = new Set(ports.values());
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory || !c.resources?.limits?.memory) {
      errors.push(`${cw}: needs cpu and memory requests and a memory limit`);
    }
    if (c.securityContext?.allowPrivilegeEscalation !== false) {
      errors.push(`${cw}: securityContext.allowPrivilegeEscalation is not false`);
    }
    for (const m of c.volumeMounts ?? []) {
      if (!volumes.has(m.name)) errors.push(`${cw}: volumeMount ${m.name} has no volume`);
    }
    for (const kind of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const probe = c[kind];
      if (!probe) continue;
      const port = probe.grpc?.port ?? probe.httpGet?.port ?? probe.tcpSocket?.port;
      const known = typeof port === 'string' ? ports.has(port) : portNumbers.has(port);
      if (!known) errors.push(`${cw}: ${kind} port ${port} is not a container port`);
    }
  }
  const clickd = (pod.containers ?? []).find((c) => c.name === 'clickd');
  const nats = (pod.containers ?? []).find((c) => c.name === 'nats');
  if (clickd) checkClickd(doc, clickd, byKind, errors);
  else if (nats) checkNats(doc, nats, byKind, errors);
  else errors.push(`${where}: no container named clickd or nats`);
}

// clickd's flags against its ports, probes, volumes, Secrets and ConfigMap.
function checkClickd(doc, clickd, byKind, errors) {
  const where = nameOf(doc);
  const spec = doc.obj.spec;
  const pod = spec.template.spec;
  const cw = `${where} container clickd`;
  const ports = new Map((clickd.ports ?? []).map((p) => [p.name, p.containerPort]));
  if (ports.get('grpc') !== GRPC_PORT) errors.push(`${cw}: no port grpc ${GRPC_PORT}`);
  if (ports.get('metrics') !== METRICS_PORT) errors.push(`${cw}: no port metrics ${METRICS_PORT}`);
  const flags = parseFlags(clickd.args);
  // With TLS on the gRPC port, the kubelet's gRPC probes (which cannot do
  // TLS) need the plaintext --health_address.
  const probePort = flags.has('health_address') ? HEALTH_PORT : GRPC_PORT;
  for (const kind of ['readinessProbe', 'livenessProbe']) {
    const grpc = clickd[kind]?.grpc;
    if (!grpc || grpc.port !== probePort || (grpc.service ?? '') !== '') {
      errors.push(`${cw}: ${kind} must be a native gRPC probe on ${probePort}, service ""`);
    }
  }
  const address = flags.get('address') ?? '';
  if (!address.endsWith(`:${GRPC_PORT}`)) errors.push(`${cw}: --address ${address} is not on port ${GRPC_PORT}`);
  for (const [flag, name, port] of [['admin_address', 'grpc-admin', ADMIN_PORT], ['health_address', 'health', HEALTH_PORT]]) {
    if (!flags.has(flag)) continue;
    if (!flags.get(flag).endsWith(`:${port}`)) errors.push(`${cw}: --${flag} is not on port ${port}`);
    if (ports.get(name) !== port) errors.push(`${cw}: --${flag} without a container port ${name} ${port}`);
  }
  const loopback = /^(127\.|localhost:|\[::1\]:)/.test(address);
  if (!loopback && !flags.has('tls_cert_file')) {
    errors.push(`${cw}: --address ${address} is not loopback and has no --tls_cert_file (plaintext gRPC)`);
  }
  if (!loopback && !flags.has('auth_tokens_file') && !flags.has('auth_cert_roles_file')) {
    errors.push(`${cw}: --address ${address} is not loopback and has no --auth_tokens_file or --auth_cert_roles_file`);
  }
  if (flags.has('metrics_port') && Number(flags.get('metrics_port')) !== METRICS_PORT) {
    errors.push(`${cw}: --metrics_port is not ${METRICS_PORT}`);
  }
  const mounts = clickd.volumeMounts ?? [];
  if (flags.get('data_dir') !== DATA_DIR) errors.push(`${cw}: --data_dir is not ${DATA_DIR}`);
  const dataMount = mounts.find((m) => m.mountPath === DATA_DIR);
  if (!dataMount || !(spec.volumeClaimTemplates ?? []).some((t) => t.metadata?.name === dataMount.name)) {
    errors.push(`${cw}: ${DATA_DIR} is not mounted from a volumeClaimTemplate`);
  }
  // A file flag's path must be a key of a mounted ConfigMap or Secret in
  // this set: --config a ConfigMap's, the TLS and auth files a Secret's.
  const checkMountedFile = (flag, kind) => {
    const { problem } = mountedFile(pod, clickd, flags.get(flag), kind, byKind);
    if (problem) errors.push(`${cw}: --${flag}: ${problem}`);
  };
  if (!flags.get('config')) errors.push(`${cw}: no --config`);
  else checkMountedFile('config', 'ConfigMap');
  for (const flag of SECRET_FILE_FLAGS) {
    if (flags.has(flag)) checkMountedFile(flag, 'Secret');
  }
  // SIGTERM: preStop runs first, then clickd drains and writes its final snapshot.
  const grace = Number(flags.get('shutdown_grace_seconds') ?? 10);
  const preStop = (clickd.lifecycle?.preStop?.exec?.command ?? []).join(' ');
  const preStopSeconds = Number((/sleep\s+(\d+)/.exec(preStop) ?? [0, 0])[1]);
  const need = grace + preStopSeconds + SNAPSHOT_BUDGET_SECONDS;
  if (!((pod.terminationGracePeriodSeconds ?? 30) > need)) {
    errors.push(`${where}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} must exceed ` +
      `preStop ${preStopSeconds} + --shutdown_grace_seconds ${grace} + snapshot ${SNAPSHOT_BUDGET_SECONDS} s`);
  }
  const replication = flags.get('replication') ?? 'none';
  if (!['none', 'jetstream'].includes(replication)) errors.push(`${cw}: --replication=${replication} is neither none nor jetstream`);
  if (replication === 'jetstream') checkReplication(doc, flags, byKind, errors);
}

// --- NATS ----------------------------------------------------------------------------

// The top level of a nats.conf: its text with every {...} and [...] block cut.
function natsTopLevel(text) {
  let depth = 0;
  let out = '';
  for (const ch of text) {
    if (ch === '{' || ch === '[') depth += 1;
    if (depth === 0) out += ch;
    if ((ch === '}' || ch === ']') && depth > 0) depth -= 1;
  }
  return out;
}

// The inside of block NAME { ... } (or NAME: [ ... ]) at the top level of text, or null.
function natsBlock(text, name) {
  const m = new RegExp(`^\\s*${name}\\s*[:=]?\\s*([{\\[])`, 'm').exec(text);
  if (!m) return null;
  const start = m.index + m[0].length;
  let depth = 1;
  for (let i = start; i < text.length; i += 1) {
    if (text[i] === '{' || text[i] === '[') depth += 1;
    if (text[i] === '}' || text[i] === ']') depth -= 1;
    if (depth === 0) return text.slice(start, i);
  }
  return null;
}

// The value of KEY at the top level of text (quotes removed), or undefined.
function natsValue(text, key) {
  const m = new RegExp(`^\\s*${key}\\s*[:=]\\s*"?([^"\\s#]+)"?`, 'm').exec(natsTopLevel(text));
  return m ? m[1] : undefined;
}

// The port of a listen address ("0.0.0.0:4222", "4222") or a port key.
function natsPort(text, listenKey, portKey, fallback) {
  const listen = natsValue(text, listenKey);
  if (listen !== undefined) return Number(listen.split(':').pop());
  const port = portKey ? natsValue(text, portKey) : undefined;
  return port !== undefined ? Number(port) : fallback;
}

// Bytes of a nats.conf size ("8MB", "1048576"), as nats-server reads them.
function natsBytes(value) {
  const m = /^(\d+)\s*([A-Za-z]*)$/.exec(value ?? '');
  if (!m) return NaN;
  const units = { '': 1, k: 1e3, kb: 1024, ki: 1024, kib: 1024, m: 1e6, mb: 1024 ** 2, mi: 1024 ** 2, mib: 1024 ** 2,
    g: 1e9, gb: 1024 ** 3, gi: 1024 ** 3, gib: 1024 ** 3 };
  const unit = units[m[2].toLowerCase()];
  return unit === undefined ? NaN : Number(m[1]) * unit;
}

const durationSeconds = (value) => {
  const m = /^(\d+)(ms|s|m|h)$/.exec(value ?? '');
  return m ? Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2]] : NaN;
};

// The NATS config of a NATS workload: { text, problem }.
function natsConfigOf(doc, byKind) {
  const pod = doc.obj.spec.template.spec;
  const nats = pod.containers.find((c) => c.name === 'nats');
  const args = nats.args ?? [];
  let path = parseFlags(args).get('config');
  const c = args.indexOf('-c');
  if (!path && c >= 0) path = args[c + 1];
  if (!path) return { text: null, problem: 'no --config' };
  const file = mountedFile(pod, nats, path, 'ConfigMap', byKind);
  return { text: file.problem ? null : file.text, problem: file.problem, path };
}

// The NATS servers: ports, routes over the governing Service, JetStream on
// the volume, lame duck within the grace period, payloads clickd needs.
function checkNats(doc, nats, byKind, errors) {
  const where = nameOf(doc);
  const cw = `${where} container nats`;
  const spec = doc.obj.spec;
  const pod = spec.template.spec;
  const ports = new Map((nats.ports ?? []).map((p) => [p.name, p.containerPort]));
  for (const [name, port] of Object.entries(NATS_PORTS)) {
    if (ports.get(name) !== port) errors.push(`${cw}: no port ${name} ${port}`);
  }
  if (doc.obj.kind !== 'StatefulSet') {
    errors.push(`${where}: NATS JetStream must be a StatefulSet (stable names for routes, a volume per server)`);
    return;
  }
  if (!(spec.replicas >= 3 && spec.replicas % 2 === 1)) {
    errors.push(`${where}: replicas ${spec.replicas}: a JetStream cluster needs an odd number, at least 3`);
  }
  if (spec.podManagementPolicy !== 'Parallel') {
    errors.push(`${where}: podManagementPolicy must be Parallel (no server is ready before a quorum has routes)`);
  }
  const svc = findNamed(byKind, 'Service', spec.serviceName);
  if (svc && svc.obj.spec?.publishNotReadyAddresses !== true) {
    errors.push(`${nameOf(svc)}: publishNotReadyAddresses must be true (routes are needed before readiness)`);
  }
  for (const kind of ['readinessProbe', 'livenessProbe']) {
    const probe = nats[kind]?.httpGet;
    if (!probe || ![NATS_PORTS.monitor, 'monitor'].includes(probe.port) || !probe.path?.startsWith('/healthz')) {
      errors.push(`${cw}: ${kind} must be an httpGet of /healthz on the monitor port`);
    }
  }
  const { text, problem } = natsConfigOf(doc, byKind);
  if (!text) {
    errors.push(`${cw}: --config: ${problem}`);
    return;
  }
  const conf = `${cw} nats.conf`;
  const client = natsPort(text, 'listen', 'port', 4222);
  if (client !== ports.get('client')) errors.push(`${conf}: clients on ${client}, not the client port ${ports.get('client')}`);
  const monitor = natsPort(text, 'http', 'http_port', natsValue(text, 'monitor_port'));
  if (Number(monitor) !== ports.get('monitor')) errors.push(`${conf}: monitoring on ${monitor}, not the monitor port ${ports.get('monitor')}`);
  const payload = natsBytes(natsValue(text, 'max_payload') ?? '1MB');
  if (payload !== NATS_MAX_PAYLOAD) errors.push(`${conf}: max_payload is ${payload} bytes, not 8MB (${NATS_MAX_PAYLOAD})`);
  const serverName = natsValue(text, 'server_name');
  const envName = (nats.env ?? []).find((e) => `$${e.name}` === serverName);
  if (!envName || envName.valueFrom?.fieldRef?.fieldPath !== 'metadata.name') {
    errors.push(`${conf}: server_name ${serverName} is not an environment variable holding the pod name`);
  }
  const js = natsBlock(text, 'jetstream');
  const storeDir = js === null ? undefined : natsValue(js, 'store_dir');
  // docs/replication.md#what-the-guarantees-rest-on: a pinned server at or
  // after the version clickd is tested with, and every write synced.
  const tag = /^nats:(\d+)\.(\d+)\.(\d+)(-[a-z0-9.]+)?$/.exec(nats.image ?? '');
  if (!tag || Number(tag[1]) * 1e6 + Number(tag[2]) * 1e3 + Number(tag[3]) < NATS_MIN_VERSION) {
    errors.push(`${cw}: image ${nats.image} is not a pinned nats:X.Y.Z at or after 2.15.0 (older servers let copies of a stream diverge)`);
  }
  if ((js === null ? undefined : natsValue(js, 'sync_interval')) !== 'always') {
    errors.push(`${conf}: jetstream sync_interval is not "always" (an acknowledged record must survive a power loss)`);
  }
  const store = (nats.volumeMounts ?? []).find((m) => storeDir !== undefined &&
    (storeDir === m.mountPath || storeDir.startsWith(`${m.mountPath.replace(/\/$/, '')}/`)));
  if (!store || !(spec.volumeClaimTemplates ?? []).some((t) => t.metadata?.name === store.name)) {
    errors.push(`${conf}: jetstream store_dir ${storeDir} is not on a volumeClaimTemplate's mount`);
  }
  const cluster = natsBlock(text, 'cluster');
  if (cluster === null) {
    errors.push(`${conf}: no cluster block`);
  } else {
    const port = natsPort(cluster, 'listen', 'port', undefined);
    if (port !== ports.get('cluster')) errors.push(`${conf}: routes listen on ${port}, not the cluster port ${ports.get('cluster')}`);
    const routes = (natsBlock(cluster, 'routes') ?? '').split(/[\s,]+/).filter(Boolean).sort();
    const name = doc.obj.metadata.name;
    const want = [...Array(spec.replicas).keys()].map((i) => `nats://${name}-${i}.${spec.serviceName}:${ports.get('cluster')}`).sort();
    if (JSON.stringify(routes) !== JSON.stringify(want)) {
      errors.push(`${conf}: routes ${routes.join(' ')} are not exactly the pods through the governing Service: ${want.join(' ')}`);
    }
  }
  // Lame duck (preStop) must finish within the grace period.
  const pid = natsValue(text, 'pid_file');
  const preStop = (nats.lifecycle?.preStop?.exec?.command ?? []).join(' ');
  if (!pid || !preStop.includes(`ldm=${pid}`)) errors.push(`${cw}: preStop must signal ldm=<pid_file> (pid_file ${pid})`);
  const ldm = (durationSeconds(natsValue(text, 'lame_duck_duration') ?? '2m') +
    durationSeconds(natsValue(text, 'lame_duck_grace_period') ?? '10s'));
  if (!((pod.terminationGracePeriodSeconds ?? 30) > ldm)) {
    errors.push(`${where}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} must exceed lame duck ${ldm} s`);
  }
}

// clickd's --nats_url: every URL a NATS pod through its governing Service
// (or a Service of the NATS pods) on the client port; every NATS pod named;
// --nats_replicas within the cluster; requests fit max_payload.
function checkReplication(doc, flags, byKind, errors) {
  const cw = `${nameOf(doc)} container clickd`;
  const natsSets = (byKind.StatefulSet ?? []).filter((w) => hasContainer(w, 'nats'));
  if (!natsSets.length) {
    errors.push(`${cw}: --replication=jetstream without a NATS StatefulSet in these manifests`);
    return;
  }
  const urls = (flags.get('nats_url') ?? '').split(',').filter(Boolean);
  if (!urls.length) errors.push(`${cw}: --replication=jetstream without --nats_url`);
  const named = new Set();
  for (const url of urls) {
    const m = /^nats:\/\/([^:/]+):(\d+)$/.exec(url);
    if (!m) {
      errors.push(`${cw}: --nats_url ${url} is not nats://HOST:PORT`);
      continue;
    }
    const [, host, port] = m;
    // HOST: POD.SERVICE (the governing Service) or SERVICE, optionally .NAMESPACE[.svc...].
    const parts = host.split('.');
    let target = null;
    for (const w of natsSets) {
      const n = w.obj.metadata.name;
      const pm = new RegExp(`^${n}-(\\d+)$`).exec(parts[0]);
      if (pm && parts[1] === w.obj.spec.serviceName && Number(pm[1]) < w.obj.spec.replicas) {
        target = { w, service: parts[1] };
        named.add(`${n}-${pm[1]}`);
      }
    }
    if (!target) {
      const svc = findNamed(byKind, 'Service', parts[0]);
      const w = svc && natsSets.find((s) => labelsMatch(svc.obj.spec?.selector, s.obj.spec.template.metadata?.labels));
      if (w) target = { w, service: parts[0] };
    }
    if (!target) {
      errors.push(`${cw}: --nats_url ${url}: ${host} is neither a pod of a NATS StatefulSet through its ` +
        'governing Service nor a Service of NATS pods');
      continue;
    }
    const svc = findNamed(byKind, 'Service', target.service);
    const sport = (svc?.obj.spec?.ports ?? []).find((p) => p.port === Number(port));
    const cport = sport && containerPorts(target.w).find((p) =>
      (typeof (sport.targetPort ?? sport.port) === 'string' ? p.name === sport.targetPort : p.containerPort === (sport.targetPort ?? sport.port)));
    if (!cport || cport.containerPort !== NATS_PORTS.client) {
      errors.push(`${cw}: --nats_url ${url}: Service ${target.service} has no port ${port} to the NATS client port`);
    }
  }
  for (const w of natsSets) {
    const missing = [...Array(w.obj.spec.replicas ?? 0).keys()].map((i) => `${w.obj.metadata.name}-${i}`)
      .filter((p) => !named.has(p));
    if (named.size && missing.length) errors.push(`${cw}: --nats_url does not list ${missing.join(', ')} (no failover to them)`);
    const r = Number(flags.get('nats_replicas') ?? 3);
    if (!(r >= 1 && r <= 5 && r <= (w.obj.spec.replicas ?? 0))) {
      errors.push(`${cw}: --nats_replicas=${r} must be 1..5 and at most the ${w.obj.spec.replicas} NATS servers`);
    }
    const { text } = natsConfigOf(w, byKind);
    const payload = natsBytes(text === null ? undefined : natsValue(text, 'max_payload') ?? '1MB');
    const request = Number(flags.get('max_message_bytes') ?? 16 << 20);
    if (!(request < payload)) {
      errors.push(`${cw}: --max_message_bytes ${request} does not fit NATS max_payload ${payload} of ${nameOf(w)}`);
    }
  }
}

// The pods' ingress: some NetworkPolicy selects them for Ingress; every rule
// admits only labelled pods (or IP blocks) to named container ports; the
// ports of ADMITTED_PORTS are each admitted by some rule. NATS's client port
// admits clickd's pods only (what they publish, every replica learns), and
// its cluster port the NATS pods only, both from their own namespace.
function checkNetworkPolicies(w, policies, workloads, errors) {
  const labels = w.obj.spec.template.metadata?.labels ?? {};
  const cports = (w.obj.spec.template.spec.containers ?? []).flatMap((c) => c.ports ?? []);
  const selecting = policies.filter((p) => labelsMatch(p.obj.spec?.podSelector?.matchLabels, labels) &&
    Object.keys(p.obj.spec?.podSelector?.matchLabels ?? {}).length > 0 &&
    (p.obj.spec?.policyTypes ?? []).includes('Ingress'));
  if (!selecting.length) {
    errors.push(`${nameOf(w)}: no NetworkPolicy selects its pods for Ingress`);
    return;
  }
  const admitted = new Set();
  for (const p of selecting) {
    for (const [i, rule] of (p.obj.spec.ingress ?? []).entries()) {
      const where = `${nameOf(p)} ingress[${i}]`;
      const peers = rule.from ?? [];
      if (!peers.length) errors.push(`${where}: admits every source (no from)`);
      for (const peer of peers) {
        const labelled = Object.keys(peer.podSelector?.matchLabels ?? {}).length > 0;
        if (!labelled && !peer.ipBlock) errors.push(`${where}: a peer without pod labels or ipBlock admits whole namespaces`);
      }
      if (!(rule.ports ?? []).length) errors.push(`${where}: admits every port`);
      for (const port of rule.ports ?? []) {
        const known = cports.find((c) => (typeof port.port === 'string' ? c.name === port.port : c.containerPort === port.port));
        if (!known) errors.push(`${where}: port ${port.port} is not a container port of ${nameOf(w)}`);
        else admitted.add(known.name);
        if (known && hasContainer(w, 'nats')) checkNatsPeers(where, w, known.name, peers, workloads, errors);
      }
    }
  }
  const container = hasContainer(w, 'clickd') ? 'clickd' : 'nats';
  for (const name of ADMITTED_PORTS[container]) {
    if (cports.some((c) => c.name === name) && !admitted.has(name)) {
      errors.push(`${nameOf(w)}: no NetworkPolicy rule admits its ${name} port`);
    }
  }
  if (container === 'nats') {
    const clickds = workloads.filter((c) => hasContainer(c, 'clickd'));
    const reach = (c) => selecting.some((p) => (p.obj.spec.ingress ?? []).some((rule) =>
      (rule.ports ?? []).some((port) => [NATS_PORTS.client, 'client'].includes(port.port)) &&
      (rule.from ?? []).some((peer) => !peer.namespaceSelector &&
        labelsMatch(peer.podSelector?.matchLabels, c.obj.spec.template.metadata?.labels))));
    for (const c of clickds) {
      if (!reach(c)) errors.push(`${nameOf(w)}: no NetworkPolicy rule lets ${nameOf(c)}'s pods reach its client port`);
    }
  }
}

// The peers a NetworkPolicy admits to a NATS port: the client port only
// clickd's pods, the cluster port only the NATS pods, same namespace.
function checkNatsPeers(where, w, port, peers, workloads, errors) {
  const allowed = { client: (o) => hasContainer(o, 'clickd'), cluster: (o) => o === w }[port];
  if (!allowed) return;
  for (const peer of peers) {
    const matches = workloads.filter((o) => Object.keys(peer.podSelector?.matchLabels ?? {}).length > 0 &&
      labelsMatch(peer.podSelector.matchLabels, o.obj.spec.template.metadata?.labels));
    if (peer.namespaceSelector || peer.ipBlock || !matches.length || !matches.every(allowed)) {
      errors.push(`${where}: NATS port ${port} admits a peer other than ` +
        `${port === 'client' ? "clickd's pods" : 'the NATS pods'} of this namespace`);
    }
  }
}

function checkConsistency(files, docs, errors) {
  const byKind = {};
  for (const d of docs) (byKind[d.obj.kind] ??= []).push(d);
  checkKustomization(files, docs, errors);
  const workloads = [...(byKind.StatefulSet ?? []), ...(byKind.Deployment ?? [])];
  if (!(byKind.StatefulSet ?? []).some((w) => hasContainer(w, 'clickd'))) errors.push('no StatefulSet of clickd');
  for (const kind of ['Service', 'ConfigMap', 'PodDisruptionBudget', 'PodMonitor', 'PrometheusRule',
    'NetworkPolicy']) {
    if (!(byKind[kind] ?? []).length) errors.push(`no ${kind}`);
  }
  const podsOf = (selector) => workloads.filter((w) => labelsMatch(selector, w.obj.spec?.template?.metadata?.labels));
  const services = byKind.Service ?? [];
  for (const w of workloads) {
    checkPodSpec(w, byKind, errors);
    if (w.obj.kind === 'StatefulSet') {
      const svc = services.find((s) => s.obj.metadata?.name === w.obj.spec.serviceName);
      if (!svc) errors.push(`${nameOf(w)}: serviceName ${w.obj.spec.serviceName} is not a Service here`);
      else if (svc.obj.spec?.clusterIP !== 'None') errors.push(`${nameOf(svc)}: governing Service is not headless`);
      if (!(w.obj.spec.replicas >= 1)) errors.push(`${nameOf(w)}: replicas must be >= 1`);
    }
  }
  for (const s of services) {
    const selector = s.obj.spec?.selector;
    const targets = selector ? podsOf(selector) : [];
    if (!targets.length) {
      errors.push(`${nameOf(s)}: selector matches no pod template`);
      continue;
    }
    for (const port of s.obj.spec.ports ?? []) {
      const target = port.targetPort ?? port.port;
      for (const w of targets) {
        const cports = (w.obj.spec.template.spec.containers ?? []).flatMap((c) => c.ports ?? []);
        const ok = cports.some((p) => (typeof target === 'string' ? p.name === target : p.containerPort === target));
        if (!ok) errors.push(`${nameOf(s)}: targetPort ${target} is not a port of ${nameOf(w)}`);
      }
    }
  }
  for (const p of byKind.PodDisruptionBudget ?? []) {
    const pods = podsOf(p.obj.spec?.selector?.matchLabels);
    if (!pods.length) errors.push(`${nameOf(p)}: selector matches no pods`);
    if (pods.length > 1) errors.push(`${nameOf(p)}: selector matches the pods of ${pods.map(nameOf).join(' and ')}`);
  }
  // One pod of each at a time: clickd keeps serving, NATS keeps its quorum.
  for (const w of workloads) {
    const pdbs = (byKind.PodDisruptionBudget ?? []).filter((p) =>
      Object.keys(p.obj.spec?.selector?.matchLabels ?? {}).length > 0 &&
      labelsMatch(p.obj.spec.selector.matchLabels, w.obj.spec.template.metadata?.labels));
    if (pdbs.length !== 1 || pdbs[0].obj.spec.maxUnavailable !== 1) {
      errors.push(`${nameOf(w)}: needs exactly one PodDisruptionBudget with maxUnavailable 1 (has ${pdbs.length})`);
    }
  }
  for (const m of byKind.PodMonitor ?? []) {
    const targets = podsOf(m.obj.spec?.selector?.matchLabels);
    if (!targets.length) errors.push(`${nameOf(m)}: selector matches no pods`);
    for (const w of targets) {
      const labels = w.obj.spec.template.metadata.labels;
      // The alert rules select job="clickd".
      if (labels[m.obj.spec.jobLabel] !== 'clickd') {
        errors.push(`${nameOf(m)}: jobLabel ${m.obj.spec.jobLabel} does not give job="clickd" on ${nameOf(w)}`);
      }
      const names = (w.obj.spec.template.spec.containers ?? []).flatMap((c) => c.ports ?? []).map((p) => p.name);
      for (const ep of m.obj.spec.podMetricsEndpoints ?? []) {
        if (!names.includes(ep.port)) errors.push(`${nameOf(m)}: port ${ep.port} is not a container port`);
      }
    }
  }
  for (const w of workloads) checkNetworkPolicies(w, byKind.NetworkPolicy ?? [], workloads, errors);
  for (const r of byKind.PrometheusRule ?? []) {
    if (!(r.obj.spec?.groups ?? []).length) errors.push(`${nameOf(r)}: no rule groups`);
  }
  for (const c of byKind.ConfigMap ?? []) {
    for (const [key, value] of Object.entries(c.obj.data ?? {})) {
      if (!key.endsWith('.json')) continue;
      try {
        const parsed = JSON.parse(value);
        if (!Array.isArray(parsed.models) || !parsed.models.length) throw new Error('no models');
      } catch (e) {
        errors.push(`${nameOf(c)}: ${key} is not a ServerConfig with models: ${e.message}`);
      }
    }
  }
}

async function validate(files, docs) {
  const errors = [];
  await checkSchemas(docs, errors);
  checkConsistency(files, docs, errors);
  return errors;
}

// --- the real binary ---------------------------------------------------------------

function clickdContainer(docs) {
  const sts = docs.find((d) => d.obj.kind === 'StatefulSet' && hasContainer(d, 'clickd'));
  return sts?.obj.spec.template.spec.containers.find((c) => c.name === 'clickd');
}

// Returns the flags the binary knows.
function knownFlags(clickd) {
  const help = spawnSync(clickd, ['--helpfull'], { encoding: 'utf8' });
  return new Set([...`${help.stdout}${help.stderr}`.matchAll(/^\s+--([A-Za-z0-9_]+) \(/gm)].map((m) => m[1]));
}

function checkFlags(known, docs, errors) {
  if (!known.has('address')) {
    errors.push('clickd --helpfull lists no --address; cannot check flags');
    return;
  }
  const flags = parseFlags(clickdContainer(docs)?.args);
  const undefok = new Set((flags.get('undefok') ?? '').split(',').filter(Boolean));
  for (const name of flags.keys()) {
    if (known.has(name)) continue;
    if (undefok.has(name)) console.log(`validate: pending: --${name} is not in this clickd yet (ignored through --undefok)`);
    else errors.push(`statefulset: clickd does not know --${name} (and would exit at start)`);
  }
  for (const name of undefok) {
    if (known.has(name)) console.log(`validate: note: clickd now has --${name}; drop it from --undefok`);
  }
}

// Starts clickd with the ConfigMap's config, waits for "serving N model(s)", stops it.
async function checkConfigStarts(clickd, known, docs, errors) {
  const container = clickdContainer(docs);
  const config = parseFlags(container?.args).get('config') ?? '';
  const cm = docs.find((d) => d.obj.kind === 'ConfigMap' && d.obj.data?.[basename(config)] !== undefined);
  if (!cm) return; // reported by checkConsistency
  const text = cm.obj.data[basename(config)];
  const want = JSON.parse(text).models.length;
  const dir = mkdtempSync(join(tmpdir(), 'clickd-validate-'));
  const path = join(dir, basename(config));
  writeFileSync(path, text);
  const defaultModel = parseFlags(container.args).get('default_model') ?? 'true';
  const args = ['--address=127.0.0.1:0', `--config=${path}`, `--default_model=${defaultModel}`];
  if (known.has('metrics_port')) args.push('--metrics_port=0'); // no fixed port to collide on
  if (known.has('data_dir')) args.push(`--data_dir=${dir}`);
  const child = spawn(clickd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const served = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), 20000);
    const onData = (chunk) => {
      output += chunk;
      const m = /serving (\d+) model\(s\)/.exec(output);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', () => { clearTimeout(timer); resolve(null); });
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  if (child.exitCode === null) child.kill('SIGTERM');
  let timer;
  const code = await Promise.race([exited, new Promise((r) => { timer = setTimeout(() => r('timeout'), 20000); })]);
  clearTimeout(timer);
  if (code === 'timeout') child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  const expected = want + (defaultModel === 'true' && !JSON.parse(text).models.some((m) => m.name === 'default') ? 1 : 0);
  if (served === null) errors.push(`clickd does not start with ${cm.file}'s ${basename(config)}: ${output.trim()}`);
  else if (served !== expected) errors.push(`clickd serves ${served} model(s) from ${cm.file}, expected ${expected}`);
  else console.log(`validate: the real clickd starts with ${cm.file}'s ${basename(config)} and serves ${served} model(s)`);
  if (served !== null && code !== 0) errors.push(`clickd exited ${code} after SIGTERM`);
}

// Has the real nats-server test (-t) each NATS StatefulSet's config, as its
// pod 0 would read it, and a copy with its last brace cut, which must fail.
function checkNatsConfig(natsServer, docs, errors) {
  const byKind = {};
  for (const d of docs) (byKind[d.obj.kind] ??= []).push(d);
  for (const w of (byKind.StatefulSet ?? []).filter((d) => hasContainer(d, 'nats'))) {
    const { text } = natsConfigOf(w, byKind);
    if (text === null) continue; // reported by checkConsistency
    const nats = w.obj.spec.template.spec.containers.find((c) => c.name === 'nats');
    const env = { ...process.env };
    for (const e of nats.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = `${w.obj.metadata.name}-0`;
    }
    const dir = mkdtempSync(join(tmpdir(), 'clickd-validate-nats-'));
    const test = (conf) => {
      writeFileSync(join(dir, 'nats.conf'), conf);
      const r = spawnSync(natsServer, ['-t', '-c', join(dir, 'nats.conf')], { encoding: 'utf8', env, timeout: 20000 });
      return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
    };
    const good = test(text);
    if (!good.ok) errors.push(`nats-server -t rejects ${nameOf(w)}'s config: ${good.output}`);
    else console.log(`validate: nats-server -t accepts ${nameOf(w)}'s config: ${good.output}`);
    const broken = test(text.slice(0, text.lastIndexOf('}')));
    if (broken.ok) errors.push(`nats-server -t accepts ${nameOf(w)}'s config without its last brace`);
    else console.log(`validate: nats-server -t rejects the config without its last brace: ${broken.output}`);
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- broken copies that must fail --------------------------------------------------

const find = (docs, kind, name) => docs.find((d) => d.obj.kind === kind && (!name || d.obj.metadata.name === name)).obj;
const podSpec = (docs) => find(docs, 'StatefulSet', 'clickd').spec.template.spec;
const natsConf = (docs, edit) => {
  const cm = find(docs, 'ConfigMap', 'clickd-nats-config');
  cm.data['nats.conf'] = edit(cm.data['nats.conf']);
};
const clickdArg = (docs, flag, value) => {
  const c = podSpec(docs).containers[0];
  c.args = c.args.filter((a) => !a.startsWith(`--${flag}=`));
  if (value !== undefined) c.args.push(`--${flag}=${value}`);
};
const remove = (docs, kind, name) => docs.splice(docs.findIndex((d) => d.obj.kind === kind && d.obj.metadata.name === name), 1);
const BREAKAGES = {
  'containerPort as a string': (d) => { podSpec(d).containers[0].ports[0].containerPort = '50051'; },
  'StatefulSet without selector': (d) => { delete find(d, 'StatefulSet', 'clickd').spec.selector; },
  'PodMonitor interval as a number': (d) => { find(d, 'PodMonitor').spec.podMetricsEndpoints[0].interval = 15; },
  'unknown kind': (d) => { find(d, 'PodDisruptionBudget', 'clickd').kind = 'PodDisruptionBudgett'; },
  'Service selecting no pod': (d) => { find(d, 'Service', 'clickd').spec.selector = { app: 'other' }; },
  'readiness probe on the metrics port': (d) => { podSpec(d).containers[0].readinessProbe.grpc.port = METRICS_PORT; },
  'grace period shorter than the drain': (d) => { podSpec(d).terminationGracePeriodSeconds = 30; },
  'mount without a volume': (d) => { podSpec(d).volumes = podSpec(d).volumes.filter((v) => v.name !== 'config'); },
  'running as root': (d) => { podSpec(d).securityContext.runAsNonRoot = false; },
  'NetworkPolicy admitting every source': (d) => { delete find(d, 'NetworkPolicy', 'clickd').spec.ingress[0].from; },
  'NetworkPolicy admitting a whole namespace': (d) => {
    find(d, 'NetworkPolicy', 'clickd').spec.ingress[0].from = [{ namespaceSelector: {} }];
  },
  'plaintext gRPC on the pod address': (d) => {
    const c = podSpec(d).containers[0];
    c.args = c.args.filter((a) => !a.startsWith('--tls_'));
  },
  'TLS key not in the Secret': (d) => {
    const c = podSpec(d).containers[0];
    c.args = c.args.map((a) => (a.startsWith('--tls_key_file=') ? '--tls_key_file=/etc/clickd/tls/other.key' : a));
  },
  'probes on the TLS port': (d) => { podSpec(d).containers[0].livenessProbe.grpc.port = GRPC_PORT; },
  '--config not in the ConfigMap': (d) => {
    const c = podSpec(d).containers[0];
    c.args = c.args.map((a) => (a.startsWith('--config=') ? '--config=/etc/clickd/other.json' : a));
  },
  // Replication: the NATS cluster and clickd's way to it.
  '--nats_url naming a NATS pod that does not exist': (d) => {
    clickdArg(d, 'nats_url', 'nats://clickd-nats-0.clickd-nats:4222,nats://clickd-nats-3.clickd-nats:4222');
  },
  '--nats_url on the cluster port': (d) => {
    clickdArg(d, 'nats_url', ['0', '1', '2'].map((i) => `nats://clickd-nats-${i}.clickd-nats:6222`).join(','));
  },
  '--nats_url leaving out a NATS pod': (d) => {
    clickdArg(d, 'nats_url', 'nats://clickd-nats-0.clickd-nats:4222,nats://clickd-nats-1.clickd-nats:4222');
  },
  '--replication=jetstream without --nats_url': (d) => { clickdArg(d, 'nats_url'); },
  '--nats_replicas above the NATS servers': (d) => { clickdArg(d, 'nats_replicas', '5'); },
  '--max_message_bytes above max_payload': (d) => { clickdArg(d, 'max_message_bytes', String(16 << 20)); },
  'no NATS StatefulSet': (d) => { remove(d, 'StatefulSet', 'clickd-nats'); },
  'NATS ConfigMap missing': (d) => { remove(d, 'ConfigMap', 'clickd-nats-config'); },
  'NATS governing Service missing': (d) => { remove(d, 'Service', 'clickd-nats'); },
  'NATS governing Service not headless': (d) => { delete find(d, 'Service', 'clickd-nats').spec.clusterIP; },
  'NATS routes through another Service': (d) => { natsConf(d, (t) => t.replaceAll('.clickd-nats:6222', '.nats:6222')); },
  'NATS routes missing a server': (d) => { natsConf(d, (t) => t.replace(/^.*clickd-nats-2\..*$/m, '')); },
  'NATS max_payload below 8MB': (d) => { natsConf(d, (t) => t.replace('max_payload: 8MB', 'max_payload: 1MB')); },
  'NATS clients on another port': (d) => { natsConf(d, (t) => t.replace('listen: 0.0.0.0:4222', 'listen: 0.0.0.0:4223')); },
  'NATS JetStream store off the volume': (d) => { natsConf(d, (t) => t.replace('store_dir: /data', 'store_dir: /tmp/js')); },
  'NATS with 2 servers': (d) => { find(d, 'StatefulSet', 'clickd-nats').spec.replicas = 2; },
  'NATS without a PodDisruptionBudget': (d) => { remove(d, 'PodDisruptionBudget', 'clickd-nats'); },
  'NATS PodDisruptionBudget allowing 2 down': (d) => { find(d, 'PodDisruptionBudget', 'clickd-nats').spec.maxUnavailable = 2; },
  'NATS client port open to the ad servers': (d) => {
    find(d, 'NetworkPolicy', 'clickd-nats').spec.ingress[0].from.push({ podSelector: { matchLabels: { 'clickd.io/client': 'ad-server' } } });
  },
  'NATS client port closed to clickd': (d) => {
    find(d, 'NetworkPolicy', 'clickd-nats').spec.ingress[0].from = [{ podSelector: { matchLabels: { 'clickd.io/client': 'ops' } } }];
  },
  'NATS routes open to clickd': (d) => {
    find(d, 'NetworkPolicy', 'clickd-nats').spec.ingress[1].from = [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'clickd' } } }];
  },
  'NATS without a NetworkPolicy': (d) => { remove(d, 'NetworkPolicy', 'clickd-nats'); },
  'NATS grace period shorter than lame duck': (d) => {
    find(d, 'StatefulSet', 'clickd-nats').spec.template.spec.terminationGracePeriodSeconds = 30;
  },
  'NATS readiness probe on the client port': (d) => {
    find(d, 'StatefulSet', 'clickd-nats').spec.template.spec.containers[0].readinessProbe.httpGet.port = 'client';
  },
};

async function main() {
  const argv = process.argv.slice(2);
  const dir = argv.find((a) => !a.startsWith('--'));
  const clickd = argv.find((a) => a.startsWith('--clickd='))?.slice('--clickd='.length);
  const natsServer = argv.find((a) => a.startsWith('--nats_server='))?.slice('--nats_server='.length);
  if (!dir) {
    console.error('usage: node validate.mjs DIR [--clickd=PATH] [--nats_server=PATH]');
    process.exit(2);
  }
  const { files, docs } = loadDir(dir);
  const errors = await validate(files, docs);
  for (const e of errors) console.log(`validate: ${e}`);
  if (!errors.length) {
    console.log(`validate: ${docs.length} objects in ${files.length} files of ${dir}: schema and consistency OK`);
  }
  if (clickd) {
    const binErrors = [];
    const known = knownFlags(clickd);
    checkFlags(known, docs, binErrors);
    await checkConfigStarts(clickd, known, docs, binErrors);
    for (const e of binErrors) console.log(`validate: ${e}`);
    errors.push(...binErrors);
  }
  if (natsServer) {
    const natsErrors = [];
    checkNatsConfig(natsServer, docs, natsErrors);
    for (const e of natsErrors) console.log(`validate: ${e}`);
    errors.push(...natsErrors);
  }
  // Only meaningful for the real manifests: the breakages find objects by name.
  if (!errors.length) {
    for (const [name, breakage] of Object.entries(BREAKAGES)) {
      const broken = structuredClone(docs);
      breakage(broken);
      const found = await validate(files, broken);
      if (!found.length) errors.push(`a manifest with ${name} passes validation`);
      else console.log(`validate: broken (${name}) rejected: ${found[0]}`);
    }
  }
  if (errors.length) {
    for (const e of errors.filter((e) => e.startsWith('a manifest with'))) console.log(`validate: ${e}`);
    process.exit(1);
  }
}

await main();
