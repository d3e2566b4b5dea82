//! Settings declared once per field ([`settings!`]): the struct, its defaults,
//! its partial form and each field's range or check, so a new field is one entry.

use std::ops::{Bound, RangeBounds};

use crate::thread::FieldError;

/// A settings struct, its `Default` and its overrides (laid over a base by
/// `apply`): each field its doc, type, default, and a range or a `check`.
/// A field whose override is not its own type names it (`Option<u64> as
/// u64`; the compiler checks it against [`Overlay`]). The schemas follow:
/// each range is the field's bounds in both, and each default is said (an
/// optional field's is to be absent).
macro_rules! settings {
    ($(#[$doc:meta])* $name:ident; $(#[$over_doc:meta])* $over:ident; $($entries:tt)*) => {
        $crate::policy::overlay::settings!(
            @field [$(#[$doc])* $name; $(#[$over_doc])* $over;] [] $($entries)*
        );
    };
    // One field at a time, into one shape. (Bounds are taken as `tt`, so
    // that `#[schema]` receives them as the literals it parses.)
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* $field:ident: $ty:ty = $default:expr, check $check:path;
        $($rest:tt)*
    ) => {
        $crate::policy::overlay::settings!(@field $head [$($done)* {
            [#[schema(default = json!($default))]] $(#[$attr])* $field: $ty as $ty = $default;
            range() check($check)
        }] $($rest)*);
    };
    // A field whose override has another type (an `Option`): set, it is
    // never null; unset, absent, which is its default.
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* $field:ident: $ty:ty as $over_ty:ty = $default:expr
            $(, $lo:tt $(..= $hi:tt)? $(.. $below:tt)?)?;
        $($rest:tt)*
    ) => {
        $crate::policy::overlay::settings!(@field $head [$($done)* {
            [#[schema(nullable = false)]] $(#[$attr])* $field: $ty as $over_ty = $default;
            range($($lo $(..= $hi)? $(.. $below)?)?) check()
        }] $($rest)*);
    };
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* $field:ident: $ty:ty = $default:expr
            $(, $lo:tt $(..= $hi:tt)? $(.. $below:tt)?)?;
        $($rest:tt)*
    ) => {
        $crate::policy::overlay::settings!(@field $head [$($done)* {
            [#[schema(default = json!($default))]] $(#[$attr])* $field: $ty as $ty = $default;
            range($($lo $(..= $hi)? $(.. $below)?)?) check()
        }] $($rest)*);
    };
    (@field [$(#[$doc:meta])* $name:ident; $(#[$over_doc:meta])* $over:ident;] [$({
        [$(#[$own:meta])*] $(#[$attr:meta])* $field:ident: $ty:ty as $over_ty:ty = $default:expr;
            range($($lo:tt $(..= $hi:tt)? $(.. $below:tt)?)?) check($($check:path)?)
    })*]) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name { $(
            $(#[$own])* $(#[$attr])*
            $(#[schema(minimum = $lo $(, maximum = $hi)? $(, exclusive_maximum = $below)?)])?
            pub $field: $ty,
        )* }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        $(#[$over_doc])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, utoipa::ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $over { $(
            $(#[$attr])*
            $(#[schema(minimum = $lo $(, maximum = $hi)? $(, exclusive_maximum = $below)?)])?
            pub $field: Option<$over_ty>,
        )* }

        impl $over {
            /// `base` with these fields laid over it; every value out of
            /// its range is an error (all at once), at `{at}/{field}`.
            pub fn apply(&self, base: &$name, at: &str) -> Result<$name, Vec<FieldError>> {
                use $crate::policy::overlay::{Overlay, within};
                let mut out = base.clone();
                let mut errs = Vec::new();
                $( if let Some(over) = &self.$field {
                    let at = format!("{at}/{}", stringify!($field));
                    let checked = Ok(())
                        $( .and_then(|()| within(
                            *over as f64,
                            ($lo as f64) $(..= ($hi as f64))? $(.. ($below as f64))?,
                        )) )?
                        .map_err(|e: String| vec![FieldError::new(at.clone(), e)])
                        $( .and_then(|()| $check(over, &at)) )?;
                    match checked.and_then(|()| base.$field.overlay(over, &at)) {
                        Ok(v) => out.$field = v,
                        Err(e) => errs.extend(e),
                    }
                } )*
                match errs.is_empty() {
                    true => Ok(out),
                    false => Err(errs),
                }
            }
        }
    };
}
pub(super) use settings;

/// How a value given for one field (by a file profile or a request's
/// `config`) lays over the base's: most replace it; `clear` merges.
pub trait Overlay: Sized {
    type Over;
    fn overlay(&self, over: &Self::Over, at: &str) -> Result<Self, Vec<FieldError>>;
}

/// `Overlay` by replacing, for each type (and its `Option`, which the value
/// sets).
macro_rules! replaced {
    ($($ty:ty),*) => {$(
        impl $crate::policy::overlay::Overlay for $ty {
            type Over = $ty;
            fn overlay(&self, over: &$ty, _: &str) -> Result<Self, Vec<FieldError>> {
                Ok(over.clone())
            }
        }
        impl $crate::policy::overlay::Overlay for Option<$ty> {
            type Over = $ty;
            fn overlay(&self, over: &$ty, _: &str) -> Result<Self, Vec<FieldError>> {
                Ok(Some(over.clone()))
            }
        }
    )*};
}
pub(super) use replaced;

replaced!(u64, f64, bool, String, Vec<String>);

/// `v` within `range`, or why not.
pub(super) fn within(v: f64, range: impl RangeBounds<f64>) -> Result<(), String> {
    match (range.contains(&v), range.start_bound(), range.end_bound()) {
        (true, ..) => Ok(()),
        (_, Bound::Included(lo), Bound::Excluded(hi)) => {
            Err(format!("must be at least {lo} and below {hi}, got {v}"))
        }
        (_, Bound::Included(lo), Bound::Included(hi)) => {
            Err(format!("must be between {lo} and {hi}, got {v}"))
        }
        _ => Err(format!("is out of range, got {v}")),
    }
}
