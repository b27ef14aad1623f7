//! The data types of the crates services use most go into messages, replies and process state
//! as they are, once whirl's feature named after the crate is on (`features = ["uuid",
//! "chrono", ...]`): an order service keeping its orders by id, with their times, prices, JSON
//! metadata, raw bodies, callback URLs and request headers.
use std::str::FromStr;

use arrayvec::ArrayVec;
use bytes::Bytes;
use chrono::{DateTime, TimeZone, Utc};
use compact_str::CompactString;
use http::{HeaderMap, HeaderValue, Method};
use indexmap::IndexMap;
use ipnet::IpNet;
use ordered_float::OrderedFloat;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use smallvec::SmallVec;
use smol_str::SmolStr;
use ulid::Ulid;
use url::Url;
use uuid::Uuid;
use whirl::prelude::*;

#[derive(Message)]
struct PlaceOrder {
    id: Uuid,
    trace: Ulid,
    placed_at: DateTime<Utc>,
    received_at: time::OffsetDateTime,
    lines: IndexMap<String, Decimal>,
    quantities: SmallVec<[u32; 4]>,
    metadata: Value,
    body: Bytes,
    callback: Url,
    method: Method,
    headers: HeaderMap,
    client_version: semver::Version,
    customer: CompactString,
    region: SmolStr,
    tags: ArrayVec<SmolStr, 4>,
    from: IpNet,
    score: OrderedFloat<f64>,
}

#[derive(Message)]
struct GetId;

#[derive(Message)]
struct Find(Uuid);

#[derive(Message)]
struct Metadata;

#[derive(Message)]
struct Total(Uuid);

#[derive(Message)]
struct PlacedAt(Uuid);

#[process]
struct Orders {
    service_id: Uuid,
    orders: hashbrown::HashMap<Uuid, PlaceOrder>,
    by_trace: IndexMap<Ulid, Uuid>,
    allowed: Vec<IpNet>,
    min_version: semver::Version,
}

#[process]
impl Orders {
    #[handle]
    fn place(&mut self, order: PlaceOrder) {
        let allowed = self.allowed.iter().any(|net| net.contains(&order.from));
        if allowed && order.client_version >= self.min_version && order.method == Method::POST {
            self.by_trace.insert(order.trace, order.id);
            self.orders.insert(order.id, order);
        }
    }

    #[handle]
    fn id(&mut self, _: GetId) -> Uuid {
        self.service_id
    }

    #[handle]
    fn find(&mut self, Find(id): Find) -> Option<Uuid> {
        self.orders.get(&id).map(|order| order.id)
    }

    #[handle]
    fn metadata(&mut self, _: Metadata) -> Vec<Value> {
        self.orders.values().map(|o| o.metadata.clone()).collect()
    }

    #[handle]
    fn total(&mut self, Total(id): Total) -> Result<Decimal, Failure> {
        let order = self
            .orders
            .get(&id)
            .ok_or_else(|| Failure::new("no such order"))?;
        Ok(order.lines.values().sum())
    }

    #[handle]
    fn placed_at(&mut self, PlacedAt(id): PlacedAt) -> Option<DateTime<Utc>> {
        self.orders.get(&id).map(|order| order.placed_at)
    }
}

fn main() {
    let rt = Runtime::new();
    let service_id = Uuid::from_u128(0x1234);
    let orders = rt.spawn(Orders {
        service_id,
        orders: hashbrown::HashMap::new(),
        by_trace: IndexMap::new(),
        allowed: vec![IpNet::from_str("10.0.0.0/8").unwrap()],
        min_version: semver::Version::new(1, 2, 0),
    });

    let id = Uuid::from_u128(42);
    let placed_at = Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("x-request-id", HeaderValue::from_static("abc"));
    let mut lines = IndexMap::new();
    lines.insert("book".to_string(), Decimal::new(1250, 2));
    lines.insert("pen".to_string(), Decimal::new(199, 2));
    let mut tags = ArrayVec::new();
    tags.push(SmolStr::new("gift"));
    orders
        .post(PlaceOrder {
            id,
            trace: Ulid::from_parts(1, 2),
            placed_at,
            received_at: time::OffsetDateTime::UNIX_EPOCH,
            lines,
            quantities: SmallVec::from_slice(&[1, 3]),
            metadata: json!({ "channel": "web", "coupon": null }),
            body: Bytes::from_static(b"{}"),
            callback: Url::parse("https://shop.example/callback").unwrap(),
            method: Method::POST,
            headers,
            client_version: semver::Version::parse("1.4.0").unwrap(),
            customer: CompactString::from("ada"),
            region: SmolStr::new("eu-west"),
            tags,
            from: IpNet::from_str("10.1.2.3/32").unwrap(),
            score: OrderedFloat(0.75),
        })
        .unwrap();

    assert_eq!(orders.call(GetId).unwrap(), service_id);
    assert_eq!(orders.call(Find(id)).unwrap(), Some(id));
    assert_eq!(orders.call(Find(Uuid::nil())).unwrap(), None);
    assert_eq!(orders.call(Total(id)).unwrap(), Decimal::new(1449, 2));
    assert_eq!(orders.call(PlacedAt(id)).unwrap(), Some(placed_at));
    let metadata = orders.call(Metadata).unwrap();
    assert_eq!(metadata, vec![json!({ "channel": "web", "coupon": null })]);
    rt.shutdown_graceful();
}
