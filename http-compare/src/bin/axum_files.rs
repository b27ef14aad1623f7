//! axum 0.8 + tower-http `ServeDir`: `axum_files PORT DIR` serves `DIR` under `/files/`.

use axum::serve::ListenerExt;
use axum::Router;
use tower_http::services::ServeDir;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, dir) = http_compare::args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(http_compare::WORKERS)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let app = Router::new().nest_service("/files", ServeDir::new(dir));
        let listener = tokio::net::TcpListener::bind(addr).await?.tap_io(|tcp| {
            // As nginx's `tcp_nodelay on`.
            let _ = tcp.set_nodelay(true);
        });
        println!("axum serving at http://{addr}/files/");
        axum::serve(listener, app).await?;
        Ok(())
    })
}
