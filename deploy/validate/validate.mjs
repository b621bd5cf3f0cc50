// Validates clickd's Kubernetes manifests offline, with no cluster:
//
//   node validate.mjs DIR [--clickd=PATH]
//
// 1. Schema: every object in DIR/*.yaml against the Kubernetes OpenAPI schema
//    of its apiVersion/kind (npm kubernetes-models; the Prometheus operator's
//    CRDs from @kubernetes-models/prometheus-operator). Unknown kinds fail.
// 2. Consistency, which no schema sees: selectors match the pod labels;
//    Service target ports, probe ports and PodMonitor ports are container
//    ports; mounts have volumes; the config file and the ConfigMap key exist;
//    the grace period covers --shutdown_grace_seconds, preStop and the final
//    snapshot; non-root, resources, gRPC probes; kustomization lists every file.
//    Security (docs/security.md): gRPC over TLS with authentication unless it
//    listens on loopback only; every TLS and auth file in a mounted Secret;
//    the probes on the plaintext --health_address; a NetworkPolicy that
//    selects the pods and admits each port only from labelled peers.
// 3. With --clickd: every flag in the container's args is one the binary
//    knows (or is listed in --undefok, reported as pending), and the real
//    clickd starts with the ConfigMap's models.json and serves its models.
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
  const clickd = (pod.containers ?? []).find((c) => c.name === 'clickd');
  if (!clickd) {
    errors.push(`${where}: no container named clickd`);
    return;
  }
  for (const c of pod.containers) {
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
  // clickd specifics.
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
    const path = flags.get(flag);
    const mount = mounts.find((m) => path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
    const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
    const source = kind === 'ConfigMap' ? volume?.configMap?.name : volume?.secret?.secretName;
    const obj = (byKind[kind] ?? []).find((d) => d.obj.metadata?.name === source);
    const key = mount ? path.slice(mount.mountPath.replace(/\/$/, '').length + 1) : '';
    const keys = { ...(obj?.obj.data ?? {}), ...(obj?.obj.stringData ?? {}) };
    if (!obj) {
      errors.push(`${cw}: --${flag}=${path} is not in a mounted ${kind} of these manifests`);
    } else if (!(key in keys)) {
      errors.push(`${cw}: ${kind} ${source} has no key ${key} for --${flag}=${path}`);
    }
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
}

// The pods' ingress: some NetworkPolicy selects them for Ingress; every rule
// admits only labelled pods (or IP blocks) to named container ports; the
// gRPC, admin and metrics ports are each admitted by some rule.
function checkNetworkPolicies(w, policies, errors) {
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
      }
    }
  }
  for (const name of ['grpc', 'grpc-admin', 'metrics']) {
    if (cports.some((c) => c.name === name) && !admitted.has(name)) {
      errors.push(`${nameOf(w)}: no NetworkPolicy rule admits its ${name} port`);
    }
  }
}

function checkConsistency(files, docs, errors) {
  const byKind = {};
  for (const d of docs) (byKind[d.obj.kind] ??= []).push(d);
  checkKustomization(files, docs, errors);
  const workloads = [...(byKind.StatefulSet ?? []), ...(byKind.Deployment ?? [])];
  if (!(byKind.StatefulSet ?? []).length) errors.push('no StatefulSet');
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
    if (!podsOf(p.obj.spec?.selector?.matchLabels).length) errors.push(`${nameOf(p)}: selector matches no pods`);
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
  for (const w of workloads) checkNetworkPolicies(w, byKind.NetworkPolicy ?? [], errors);
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
  const sts = docs.find((d) => d.obj.kind === 'StatefulSet');
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

// --- broken copies that must fail --------------------------------------------------

const find = (docs, kind, name) => docs.find((d) => d.obj.kind === kind && (!name || d.obj.metadata.name === name)).obj;
const podSpec = (docs) => find(docs, 'StatefulSet').spec.template.spec;
const BREAKAGES = {
  'containerPort as a string': (d) => { podSpec(d).containers[0].ports[0].containerPort = '50051'; },
  'StatefulSet without selector': (d) => { delete find(d, 'StatefulSet').spec.selector; },
  'PodMonitor interval as a number': (d) => { find(d, 'PodMonitor').spec.podMetricsEndpoints[0].interval = 15; },
  'unknown kind': (d) => { find(d, 'PodDisruptionBudget').kind = 'PodDisruptionBudgett'; },
  'Service selecting no pod': (d) => { find(d, 'Service', 'clickd').spec.selector = { app: 'other' }; },
  'readiness probe on the metrics port': (d) => { podSpec(d).containers[0].readinessProbe.grpc.port = METRICS_PORT; },
  'grace period shorter than the drain': (d) => { podSpec(d).terminationGracePeriodSeconds = 30; },
  'mount without a volume': (d) => { podSpec(d).volumes = podSpec(d).volumes.filter((v) => v.name !== 'config'); },
  'running as root': (d) => { podSpec(d).securityContext.runAsNonRoot = false; },
  'NetworkPolicy admitting every source': (d) => { delete find(d, 'NetworkPolicy').spec.ingress[0].from; },
  'NetworkPolicy admitting a whole namespace': (d) => {
    find(d, 'NetworkPolicy').spec.ingress[0].from = [{ namespaceSelector: {} }];
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
};

async function main() {
  const argv = process.argv.slice(2);
  const dir = argv.find((a) => !a.startsWith('--'));
  const clickd = argv.find((a) => a.startsWith('--clickd='))?.slice('--clickd='.length);
  if (!dir) {
    console.error('usage: node validate.mjs DIR [--clickd=PATH]');
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
