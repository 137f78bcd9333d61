//! The `wire_word!` macro: closed vocabularies (`active | held | stopped`, `candidate | bar`,
//! ...) with one spelling shared by serde, `Display`, `FromStr`, `as_str` and `parse`.
//!
//! It only generates code for the newer enums of this crate; [`crate::Direction`], [`crate::Role`]
//! and [`crate::Verdict`] keep their hand-written methods (other crates already call them).

/// Declares a fieldless enum whose variants have fixed lowercase spellings.
macro_rules! wire_word {
    (
        $(#[$doc:meta])*
        $name:ident, $what:literal {
            $( $(#[$vdoc:meta])* $variant:ident => $word:literal, )+
        }
    ) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
        )]
        pub enum $name {
            $( $(#[$vdoc])* #[serde(rename = $word)] $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$(Self::$variant),+];

            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $word, )+
                }
            }

            /// Parses the wire spelling.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $( $word => Some(Self::$variant), )+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::error::ModelError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s).ok_or_else(|| crate::error::ModelError::UnknownWord {
                    what: $what,
                    value: s.to_owned(),
                    expected: Self::ALL
                        .iter()
                        .map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
    };
}

pub(crate) use wire_word;
