"""TLS, mTLS and bearer tokens against the real clickd (docs/security.md),
with certificates made by the openssl command in a temporary directory."""

import subprocess

import grpc
import pytest

import clickd
from server import Server

ADS = [{"ad": [7]}]
TOKENS = {"predict": "p" * 32, "learn": "l" * 32, "admin": "a" * 32}


def _openssl(directory, command):
    subprocess.run(command, shell=True, cwd=directory, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60)


def _issue(directory, name, cn, ext):
    (directory / f"{name}.ext").write_text(ext)
    _openssl(directory,
             f"openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             f"-keyout {name}.key -out {name}.csr -subj /CN={cn} && "
             f"openssl x509 -req -in {name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
             f"-days 2 -out {name}.crt -extfile {name}.ext")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and clickd.test, a client certificate."""
    d = tmp_path_factory.mktemp("pki")
    _openssl(d, "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                "-keyout ca.key -out ca.crt -days 2 -subj /CN=clickd-python-test-ca")
    _issue(d, "server", "clickd", "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                                  "subjectAltName=IP:127.0.0.1,DNS:clickd.test\n")
    _issue(d, "adserver", "adserver", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    (d / "tokens").write_text("".join(f"{role} {token}\n" for role, token in TOKENS.items()))
    (d / "cert_roles").write_text("predict adserver\n")
    return d


def _read(pki, name):
    return (pki / name).read_bytes()


@pytest.fixture(scope="module")
def tls_server(pki):
    s = Server([f"--tls_cert_file={pki / 'server.crt'}", f"--tls_key_file={pki / 'server.key'}",
                f"--auth_tokens_file={pki / 'tokens'}"]).start()
    yield s
    s.close()


def test_tls_with_bearer_tokens(tls_server, pki):
    ca = _read(pki, "ca.crt")

    def client(role=None, token=None, **kwargs):
        token = token or (TOKENS[role] if role else None)
        kwargs.setdefault("timeout", 10)
        return clickd.Client(tls_server.address, root_certificates=ca, token=token, **kwargs)

    with client("predict") as c:
        assert len(c.predict("default", ADS).predictions) == 1
        with pytest.raises(clickd.PermissionDeniedError, match="Update needs role learn"):
            c.update("default", [({"ad": [7]}, 1)])
    with client("learn") as c:
        assert c.update("default", [({"ad": [7]}, 1)]).applied == 1
        with pytest.raises(clickd.PermissionDeniedError, match="CreateModel needs role admin"):
            c.create_model("secure")
        # Streams carry the token too.
        with c.open_acked_update_stream() as stream:
            assert stream.send(clickd.update_request("default", [({"ad": [7]}, 0)])).applied == 1
            stream.finish()
    with client("admin", server_name="clickd.test") as c:
        c.create_model("secure")
        c.delete_model("secure")
    with client() as c:
        with pytest.raises(clickd.UnauthenticatedError, match="Predict needs credentials"):
            c.predict("default", ADS)
    with client(token="x" * 32) as c:
        with pytest.raises(clickd.UnauthenticatedError, match="the bearer token is not valid"):
            c.predict("default", ADS)
    # Plaintext to a TLS port, or a server name the certificate does not
    # hold, never gets through.
    with clickd.Client(tls_server.address, token=TOKENS["predict"], timeout=2,
                       retry=clickd.RetryPolicy(max_attempts=1)) as c:
        with pytest.raises(clickd.UnavailableError):
            c.predict("default", ADS)
    with client("predict", server_name="other.test", timeout=2,
                retry=clickd.RetryPolicy(max_attempts=1)) as c:
        with pytest.raises(clickd.UnavailableError):
            c.predict("default", ADS)
    with pytest.raises(ValueError):
        clickd.Client(tls_server.address, token="has space")


def test_mtls_client_certificates(pki):
    s = Server([f"--tls_cert_file={pki / 'server.crt'}", f"--tls_key_file={pki / 'server.key'}",
                f"--tls_client_ca_file={pki / 'ca.crt'}",
                f"--auth_cert_roles_file={pki / 'cert_roles'}"]).start()
    try:
        with clickd.Client(s.address, root_certificates=_read(pki, "ca.crt"),
                           private_key=_read(pki, "adserver.key"),
                           certificate_chain=_read(pki, "adserver.crt"), timeout=10) as c:
            assert len(c.predict("default", ADS).predictions) == 1
            with pytest.raises(clickd.PermissionDeniedError):
                c.update("default", [({"ad": [7]}, 1)])
        with clickd.Client(s.address, root_certificates=_read(pki, "ca.crt"), timeout=2,
                           retry=clickd.RetryPolicy(max_attempts=1)) as c:
            with pytest.raises(clickd.ClickdError) as e:
                c.predict("default", ADS)
            assert e.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        s.close()
