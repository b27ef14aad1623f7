//! The page, embedded: `assets/index.html`, `assets/app.js` and `assets/app.css`, served as
//! they are (no build step, nothing fetched from the network).

/// `/`.
pub(crate) const INDEX_HTML: &str = include_str!("assets/index.html");
/// `/app.js`.
pub(crate) const APP_JS: &str = include_str!("assets/app.js");
/// `/app.css`.
pub(crate) const APP_CSS: &str = include_str!("assets/app.css");
