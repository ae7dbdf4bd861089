//! HTTPS: the identity the HTTPS listener presents. An operator gives a PEM certificate chain
//! and key (`--tls-cert`, `--tls-key`); on a laptop, a self-signed certificate is made on
//! the first start and kept in the data directory (`tls/cert.pem`, `tls/key.pem`), so a
//! client trusts it once (its path and SHA-256 fingerprint are printed). It is made again
//! only when it nears its end or no longer names the listening address.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio_rustls::rustls;

/// How long a self-signed certificate is valid.
const SELF_SIGNED_DAYS: i64 = 365;
/// A self-signed certificate with less left than this is made again at start.
const RENEW_DAYS: i64 = 30;

/// What the HTTPS listener presents.
#[derive(Clone)]
pub struct Identity {
    /// The TLS settings of the listener (HTTP/1.1 only, as the server).
    pub config: Arc<rustls::ServerConfig>,
    /// The certificate file (the one to trust, for a self-signed one).
    pub cert_path: PathBuf,
    /// SHA-256 of the leaf certificate, as `AB:CD:…`.
    pub fingerprint: String,
    /// Made by dialtone (not given by the operator).
    pub self_signed: bool,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("cert_path", &self.cert_path)
            .field("fingerprint", &self.fingerprint)
            .field("self_signed", &self.self_signed)
            .finish_non_exhaustive()
    }
}

/// The SHA-256 fingerprint of a DER certificate, as `openssl x509 -fingerprint -sha256` shows.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The operator's certificate chain and key (PEM files).
pub fn load(cert: &Path, key: &Path) -> anyhow::Result<Identity> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("--tls-cert {}: cannot read it", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("--tls-cert {}: not a PEM certificate chain", cert.display()))?;
    let Some(leaf) = certs.first() else {
        anyhow::bail!("--tls-cert {}: no certificate in it", cert.display());
    };
    let fingerprint = fingerprint(leaf);
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("--tls-key {}: not a PEM private key", key.display()))?;
    Ok(Identity {
        config: server_config(certs, key)?,
        cert_path: cert.to_owned(),
        fingerprint,
        self_signed: false,
    })
}

fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the TLS certificate does not match its key")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// What is kept beside a self-signed certificate, to know when to make it again.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Made {
    /// Its names (DNS names and IP addresses).
    names: Vec<String>,
    /// The end of its validity (seconds since the epoch).
    not_after: i64,
}

/// The names a self-signed certificate carries for a listener on `host`: `localhost`,
/// `127.0.0.1`, `::1`, and the host itself when it is a specific address.
pub fn self_signed_names(host: IpAddr) -> Vec<String> {
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    let host = host.to_string();
    if !host.parse::<IpAddr>().is_ok_and(|h| h.is_unspecified()) && !names.contains(&host) {
        names.push(host);
    }
    names
}

/// The self-signed certificate kept in `dir` (made now when missing, near its end, or for
/// other names). `now` is seconds since the epoch.
pub fn self_signed(dir: &Path, names: &[String], now: i64) -> anyhow::Result<Identity> {
    let (cert_path, key_path, made_path) = (
        dir.join("cert.pem"),
        dir.join("key.pem"),
        dir.join("made.json"),
    );
    let kept: Option<Made> = std::fs::read(&made_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let usable = kept
        .as_ref()
        .is_some_and(|m| m.names == names && m.not_after - now > RENEW_DAYS * 86_400)
        && cert_path.exists()
        && key_path.exists();
    if usable && let Ok(identity) = load(&cert_path, &key_path) {
        return Ok(Identity {
            self_signed: true,
            ..identity
        });
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let not_after = now + SELF_SIGNED_DAYS * 86_400;
    let (cert_pem, key_pem) = make(names, now, not_after)?;
    write_private(&key_path, key_pem.as_bytes())?;
    write_file(&cert_path, cert_pem.as_bytes())?;
    let made = Made {
        names: names.to_vec(),
        not_after,
    };
    write_file(&made_path, &serde_json::to_vec(&made)?)?;
    tracing::info!(path = %cert_path.display(), "made a self-signed TLS certificate");
    Ok(Identity {
        self_signed: true,
        ..load(&cert_path, &key_path)?
    })
}

/// A self-signed ECDSA P-256 certificate for `names`, valid from a day before `now` to
/// `not_after`: (certificate PEM, PKCS#8 key PEM).
fn make(names: &[String], now: i64, not_after: i64) -> anyhow::Result<(String, String)> {
    let mut params = rcgen::CertificateParams::new(names.to_vec())
        .context("the names of the self-signed certificate")?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "dialtone (self-signed)");
    params.not_before = time::OffsetDateTime::from_unix_timestamp(now - 86_400)?;
    params.not_after = time::OffsetDateTime::from_unix_timestamp(not_after)?;
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let key = rcgen::KeyPair::generate().context("a TLS key")?;
    let cert = params
        .self_signed(&key)
        .context("the self-signed certificate")?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes through a temporary file and a rename, so a crash never leaves half a file.
fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// [`write_file`], readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    #[test]
    fn a_self_signed_certificate_is_kept_until_it_nears_its_end() {
        let dir = tempfile::tempdir().expect("dir");
        let names = self_signed_names("127.0.0.1".parse().expect("ip"));
        let now = 1_800_000_000;
        let first = self_signed(dir.path(), &names, now).expect("made");
        assert!(first.self_signed);
        assert_eq!(first.fingerprint.len(), 32 * 3 - 1);
        let again = self_signed(dir.path(), &names, now + 300 * DAY).expect("kept");
        assert_eq!(again.fingerprint, first.fingerprint, "kept while valid");
        let renewed = self_signed(dir.path(), &names, now + 340 * DAY).expect("renewed");
        assert_ne!(
            renewed.fingerprint, first.fingerprint,
            "made again near its end"
        );
        let other = self_signed_names("192.0.2.7".parse().expect("ip"));
        let moved = self_signed(dir.path(), &other, now + 340 * DAY).expect("for new names");
        assert_ne!(
            moved.fingerprint, renewed.fingerprint,
            "made again for new names"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("key.pem"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is its owner's only");
    }

    #[test]
    fn a_wrong_key_or_file_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("dir");
        let names = self_signed_names("127.0.0.1".parse().expect("ip"));
        self_signed(dir.path(), &names, 1_800_000_000).expect("made");
        let other = tempfile::tempdir().expect("dir");
        self_signed(other.path(), &names, 1_800_000_000).expect("made");
        let err = load(&dir.path().join("cert.pem"), &other.path().join("key.pem"))
            .expect_err("mismatched");
        assert!(format!("{err:#}").contains("does not match"), "{err:#}");
        let err =
            load(&dir.path().join("nope.pem"), &dir.path().join("key.pem")).expect_err("missing");
        assert!(format!("{err:#}").contains("--tls-cert"), "{err:#}");
        let err = load(&dir.path().join("key.pem"), &dir.path().join("key.pem"))
            .expect_err("a key is no certificate");
        assert!(format!("{err:#}").contains("--tls-cert"), "{err:#}");
    }
}
