//! Accounts: their status and how they pay.

use std::fmt;

/// Whether an account may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountStatus {
    /// Normal.
    Active,
    /// Credit shutdown or operator decision: reads work, spending is refused.
    Suspended,
}

impl AccountStatus {
    /// The stored and shown form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Suspended => "suspended",
        }
    }

    /// Parses the stored form.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "active" => Some(Self::Active),
            "suspended" => Some(Self::Suspended),
            _ => None,
        }
    }
}

/// How an account pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BillingMode {
    /// Spends a credit balance that must stay positive.
    Prepaid,
    /// Billed afterwards; has no credit balance.
    Postpaid,
}

impl BillingMode {
    /// The stored and shown form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prepaid => "prepaid",
            Self::Postpaid => "postpaid",
        }
    }

    /// Parses the stored form.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "prepaid" => Some(Self::Prepaid),
            "postpaid" => Some(Self::Postpaid),
            _ => None,
        }
    }
}

impl fmt::Display for AccountStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Checks an ISO 4217 currency code (three uppercase letters).
pub fn is_currency(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase())
}
