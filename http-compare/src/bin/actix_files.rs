//! actix-web 4 + actix-files: `actix_files PORT DIR` serves `DIR` under `/files/`.

use actix_web::{App, HttpServer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, dir) = http_compare::args()?;
    actix_web::rt::System::new().block_on(async move {
        println!("actix-web serving at http://{addr}/files/");
        HttpServer::new(move || App::new().service(actix_files::Files::new("/files", &dir)))
            .workers(http_compare::WORKERS)
            .on_connect(|conn, _| {
                // As nginx's `tcp_nodelay on`.
                if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
                    let _ = tcp.set_nodelay(true);
                }
            })
            .bind(addr)?
            .run()
            .await
    })?;
    Ok(())
}
