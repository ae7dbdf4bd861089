//! API keys and legacy passwords: generation and the one-way forms that are stored.

use rand::Rng;
use sha2::{Digest, Sha256};

/// Every API key begins with this, so leaked keys are easy to recognise.
pub const API_KEY_PREFIX: &str = "dt_";
/// Length of the random part (base62: 32 chars is about 190 bits).
const API_KEY_RANDOM_LEN: usize = 32;
/// How many characters of a key identify it in listings and revocation (`dt_` + 8).
pub const API_KEY_ID_LEN: usize = 11;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `len` random letters and digits (keys, passwords, the random part of event ids).
pub fn random_base62(len: usize) -> String {
    let mut rng = rand::rng();
    (0..len)
        .map(|_| BASE62[rng.random_range(0..BASE62.len())] as char)
        .collect()
}

/// A new API key in clear; shown once, then only its hash is kept.
pub fn generate_api_key() -> String {
    format!("{API_KEY_PREFIX}{}", random_base62(API_KEY_RANDOM_LEN))
}

/// The stored form of an API key: hex SHA-256. Keys are high-entropy, so no salt is needed.
pub fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The public identifier of a key (`dt_` + 8 characters), used to list and revoke it.
pub fn api_key_id(key: &str) -> String {
    key.chars().take(API_KEY_ID_LEN).collect()
}

/// A new random legacy password (for Basic login:password on the earlier interfaces).
pub fn generate_password() -> String {
    random_base62(20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_prefixed_unique_and_hashed() {
        let a = generate_api_key();
        let b = generate_api_key();
        assert!(a.starts_with("dt_"));
        assert_eq!(a.len(), 35);
        assert_ne!(a, b);
        assert_eq!(hash_api_key(&a).len(), 64);
        assert_ne!(hash_api_key(&a), hash_api_key(&b));
        assert_eq!(api_key_id(&a).len(), 11);
    }
}

/// The stored form of a legacy password (argon2id with a random salt, PHC string).
pub fn hash_password(password: &str) -> String {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt_bytes: [u8; 16] = rand::random();
    let Ok(salt) = SaltString::encode_b64(&salt_bytes) else {
        return String::new();
    };
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .unwrap_or_default()
}

/// Checks a legacy password against its stored form (constant-time inside argon2).
pub fn verify_password(password: &str, stored: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(stored)
        .map(|h| {
            argon2::Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod password_tests {
    use super::*;

    #[test]
    fn passwords_verify_only_themselves() {
        let stored = hash_password("s3cret");
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify_password("s3cret", &stored));
        assert!(!verify_password("s3cres", &stored));
        assert!(!verify_password("s3cret", "garbage"));
    }
}
