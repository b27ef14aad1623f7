//! The IRIS emergency resources the `List` and `Show` handlers serve, held in process in
//! place of the paper's database so the demo needs no external service. Rendering is a few
//! lines of hand-written JSON rather than a serializer dependency; [`json_string`] is the
//! one place that must be right, and is tested on its own.

use std::fmt::Write as _;

/// One emergency resource.
#[derive(whirl::Isolated, Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// 1-based, dense.
    pub id: u32,
    /// Display name.
    pub name: String,
    /// What it is (ambulance, shelter...).
    pub kind: String,
    /// Its availability.
    pub status: String,
    /// Where it is.
    pub location: String,
}

impl Resource {
    /// The resource as a JSON object.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"id\":{},\"name\":{},\"kind\":{},\"status\":{},\"location\":{}}}",
            self.id,
            json_string(&self.name),
            json_string(&self.kind),
            json_string(&self.status),
            json_string(&self.location)
        )
    }
}

const KINDS: &[&str] = &[
    "ambulance",
    "fire engine",
    "police unit",
    "helicopter",
    "shelter",
    "generator",
];
const STATUSES: &[&str] = &["available", "deployed", "maintenance"];
const LOCATIONS: &[&str] = &[
    "North Station",
    "Harbour Depot",
    "General Hospital",
    "Airfield",
    "City Hall",
    "Riverside Camp",
    "Hill Road Yard",
];

/// All resources, ordered by id.
#[derive(whirl::Isolated, Debug, Clone, Default)]
pub struct Store {
    resources: Vec<Resource>,
}

impl Store {
    /// `n` resources with ids 1..=n, the same on every run so load tests are repeatable.
    pub fn demo(n: u32) -> Store {
        let pick = |list: &'static [&'static str], i: u32, stride: u32| {
            list[(i.wrapping_mul(stride) as usize) % list.len()]
        };
        let resources = (1..=n)
            .map(|id| {
                let kind = pick(KINDS, id, 1);
                Resource {
                    id,
                    name: format!("{} {}", capitalize(kind), id),
                    kind: kind.to_string(),
                    status: pick(STATUSES, id, 7).to_string(),
                    location: pick(LOCATIONS, id, 5).to_string(),
                }
            })
            .collect();
        Store { resources }
    }

    /// Number of resources.
    pub fn len(&self) -> usize {
        self.resources.len()
    }

    #[cfg(test)]
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// Up to `limit` resources starting at position `offset` (empty past the end).
    pub fn list(&self, offset: usize, limit: usize) -> &[Resource] {
        let start = offset.min(self.resources.len());
        let end = start.saturating_add(limit).min(self.resources.len());
        &self.resources[start..end]
    }

    /// The resource with `id`.
    pub fn get(&self, id: u32) -> Option<&Resource> {
        let index = usize::try_from(id).ok()?.checked_sub(1)?;
        self.resources.get(index)
    }

    /// A page of the listing as `{"offset":..,"total":..,"items":[..]}`.
    pub fn list_json(&self, offset: usize, limit: usize) -> String {
        let mut out = format!("{{\"offset\":{offset},\"total\":{},\"items\":[", self.len());
        for (i, resource) in self.list(offset, limit).iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&resource.to_json());
        }
        out.push_str("]}");
        out
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `s` as a JSON string literal: quotes, backslashes and control characters escaped
/// (RFC 8259 §7), plus U+2028/U+2029 so the output is also safe inside JavaScript.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_is_deterministic_and_dense() {
        let a = Store::demo(100);
        assert_eq!(a.len(), 100);
        assert_eq!(a.list(0, 100), Store::demo(100).list(0, 100));
        for (i, r) in a.list(0, 100).iter().enumerate() {
            assert_eq!(r.id as usize, i + 1);
        }
        assert_eq!(a.get(1).map(|r| r.name.as_str()), Some("Fire engine 1"));
        assert!(Store::demo(0).is_empty());
    }

    #[test]
    fn get_out_of_range() {
        let store = Store::demo(3);
        assert!(store.get(0).is_none());
        assert!(store.get(3).is_some());
        assert!(store.get(4).is_none());
        assert!(store.get(u32::MAX).is_none());
    }

    #[test]
    fn list_clamps_pages() {
        let store = Store::demo(10);
        assert_eq!(store.list(0, 3).len(), 3);
        assert_eq!(store.list(8, 5).len(), 2);
        assert!(store.list(10, 5).is_empty());
        assert!(store.list(usize::MAX, usize::MAX).is_empty());
        assert_eq!(store.list(2, usize::MAX).len(), 8);
        assert_eq!(store.list(4, 1)[0].id, 5);
    }

    #[test]
    fn json_escaping() {
        assert_eq!(json_string("plain"), "\"plain\"");
        assert_eq!(json_string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(json_string("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(json_string("\u{0}\u{1f}\u{7f}"), "\"\\u0000\\u001f\u{7f}\"");
        assert_eq!(json_string("é ✓ \u{2028}"), "\"é ✓ \\u2028\"");
        assert_eq!(json_string(""), "\"\"");
    }

    #[test]
    fn resource_json() {
        let r = Resource {
            id: 7,
            name: "Pier \"B\"".into(),
            kind: "boat".into(),
            status: "ok".into(),
            location: "C:\\dock".into(),
        };
        assert_eq!(
            r.to_json(),
            r#"{"id":7,"name":"Pier \"B\"","kind":"boat","status":"ok","location":"C:\\dock"}"#
        );
    }

    #[test]
    fn list_json_shape() {
        let store = Store::demo(3);
        let json = store.list_json(1, 1);
        assert!(json.starts_with("{\"offset\":1,\"total\":3,\"items\":[{\"id\":2,"));
        assert!(json.ends_with("}]}"));
        assert_eq!(
            store.list_json(5, 2),
            "{\"offset\":5,\"total\":3,\"items\":[]}"
        );
    }
}
