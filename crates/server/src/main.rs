//! `zipdb serve`: the MySQL-protocol server on the embedded engine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use zipdb_engine::{Database, Options};
use zipdb_server::{Server, ServerConfig};

#[derive(Parser, Debug)]
#[command(
    name = "zipdb",
    version,
    about = "zipdb: a compressed, MySQL-compatible database"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Serve the MySQL protocol.
    Serve {
        /// Address to listen on. A non-loopback address only once every account has a
        /// password (ALTER USER 'root'@'localhost' IDENTIFIED BY '...').
        #[arg(long, default_value = "127.0.0.1")]
        listen: std::net::IpAddr,
        #[arg(long, default_value_t = 3307)]
        port: u16,
        /// Data directory (created if missing).
        #[arg(long, default_value = "./zipdb-data")]
        data_dir: PathBuf,
        /// Buffer pool size in MiB.
        #[arg(long, default_value_t = 256)]
        pool_mb: usize,
        #[arg(long, default_value_t = 1000)]
        max_connections: usize,
        /// Largest packet accepted from a client, in bytes.
        #[arg(long, default_value_t = 64 << 20)]
        max_allowed_packet: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Serve {
            listen,
            port,
            data_dir,
            pool_mb,
            max_connections,
            max_allowed_packet,
        } => {
            // SIGINT or SIGTERM: stop accepting, then close the database with a checkpoint, so
            // that the next start has no log to replay. Installed first, so that a signal during
            // startup (or recovery) is honoured once the database is open.
            let (tx, rx) = std::sync::mpsc::channel();
            if let Err(e) = ctrlc::set_handler(move || {
                let _ = tx.send(());
            }) {
                eprintln!("zipdb: cannot install the signal handler: {e}");
                return ExitCode::FAILURE;
            }
            let config = ServerConfig {
                listen: SocketAddr::new(listen, port),
                max_connections,
                max_allowed_packet,
                ..ServerConfig::default()
            };
            // Bind before opening (and maybe recovering) the database, so that a busy port is
            // reported at once; whether the address may be served depends on the accounts,
            // which `spawn` checks once the catalog is open.
            let server = match Server::bind(config) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("zipdb: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let options = Options {
                pool_bytes: pool_mb << 20,
                ..Options::default()
            };
            // Opening runs crash recovery (with progress) if the last run did not stop cleanly.
            let db = match Database::open(&data_dir, options) {
                Ok(db) => db,
                Err(e) => {
                    eprintln!(
                        "zipdb: cannot open the database in {}: {e}",
                        data_dir.display()
                    );
                    return ExitCode::FAILURE;
                }
            };
            let instance = match zipdb_sql::Instance::open(
                db.clone(),
                zipdb_sql::InstanceOptions {
                    max_allowed_packet: max_allowed_packet as u64,
                    max_connections: max_connections as u64,
                    ..Default::default()
                },
            ) {
                Ok(i) => i,
                Err(e) => {
                    eprintln!("zipdb: cannot open the SQL catalog: {}", e.message);
                    return ExitCode::FAILURE;
                }
            };
            let running = match server.spawn(instance) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("zipdb: {e}");
                    // Nothing was served: close the database cleanly (checkpoint), so that the
                    // next start has no log to replay.
                    if let Err(e) = db.close() {
                        eprintln!("zipdb: closing the database failed: {e}");
                    }
                    return ExitCode::FAILURE;
                }
            };
            let addr = running.addr();
            eprintln!(
                "zipdb: data in {}, listening on {addr}; connect with: mariadb -h {} -P {} -u root",
                data_dir.display(),
                addr.ip(),
                addr.port()
            );
            let _ = rx.recv();
            eprintln!("zipdb: shutting down (stop accepting, checkpoint, close)");
            running.stop();
            match db.close() {
                Ok(()) => {
                    eprintln!("zipdb: clean shutdown");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("zipdb: shutdown failed: {e}; the next start recovers from the log");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
