//! Signatures of webhook bodies: base64 of the raw HMAC of the exact body bytes.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha512};

/// `X-<BRAND>-HmacSignature` of `body` with `secret`, for `SHA256` (default) or `SHA512`.
pub(crate) fn sign(algo: &str, secret: &str, body: &[u8]) -> String {
    let raw = if algo == "SHA512" {
        let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(secret.as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(body);
        mac.finalize().into_bytes().to_vec()
    } else {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(body);
        mac.finalize().into_bytes().to_vec()
    };
    base64::engine::general_purpose::STANDARD.encode(raw)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_vectors() {
        // RFC 4231 test case 2.
        let b64 = super::sign("SHA256", "Jefe", b"what do ya want for nothing?");
        assert_eq!(b64, "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=");
        assert_eq!(
            super::sign("SHA512", "Jefe", b"what do ya want for nothing?").len(),
            88
        );
    }
}
