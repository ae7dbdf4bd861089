//! Enums stored and sent as one word (`"inbound-call"`, `"ended"`): one definition gives
//! the variants, their words, parsing and serde, so a new variant cannot be stored under a
//! word nobody parses.

/// Declares a word enum: `ALL`, `as_str`, `parse`, `Display` and serde as the word.
#[macro_export]
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The stored and wire word.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $word,)+
                }
            }

            /// Parses the word (None for any other text).
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($word => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl $crate::Word for $name {
            fn word(self) -> &'static str {
                self.as_str()
            }
            fn from_word(text: &str) -> Option<Self> {
                Self::parse(text)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                Self::parse(&text).ok_or_else(|| {
                    <D::Error as ::serde::de::Error>::custom(format!(
                        "unknown {}: {text:?}",
                        stringify!($name)
                    ))
                })
            }
        }
    };
}

/// A value stored as one word (the enums [`words!`] declares), so the store decodes any of
/// them the same way and refuses a word it does not know.
pub trait Word: Sized + Copy + 'static {
    /// The stored word.
    fn word(self) -> &'static str;
    /// The variant of a stored word.
    fn from_word(text: &str) -> Option<Self>;
}
