//! The IRIS emergency resources the `List` and `Show` handlers serve, held in process in
//! place of the paper's database so the demo needs no external service; rendered as JSON by
//! serde_json.

use serde::Serialize;

/// One emergency resource.
#[derive(whirl::Isolated, Serialize, Debug, Clone, PartialEq, Eq)]
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
        // Numbers and strings only: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
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
        #[derive(Serialize)]
        struct Page<'a> {
            offset: usize,
            total: usize,
            items: &'a [Resource],
        }
        let page = Page {
            offset,
            total: self.len(),
            items: self.list(offset, limit),
        };
        serde_json::to_string(&page).unwrap_or_default()
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
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
    fn strings_are_escaped_and_round_trip() {
        let r = Resource {
            id: 1,
            name: "quote \" backslash \\ newline \n tab \t nul \u{0} é ✓".into(),
            kind: String::new(),
            status: "\u{1f}".into(),
            location: "\u{2028}".into(),
        };
        let json = r.to_json();
        assert!(!json.contains('\n') && !json.contains('\u{0}') && !json.contains('\u{1f}'));
        let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(back["name"], r.name.as_str());
        assert_eq!(back["status"], "\u{1f}");
        assert_eq!(back["location"], "\u{2028}");
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
