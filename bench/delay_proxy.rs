//! A TCP proxy for bin/bench that adds a fixed delay to every chunk of bytes,
//! in each direction, without limiting throughput: a chunk read at time t is
//! written at t + delay, in order, while later chunks are already being read.
//! A request and its reply therefore take 2 x delay longer, pipelined or not.
//!
//!   delay_proxy LISTEN_PORT UPSTREAM_HOST:UPSTREAM_PORT DELAY_MICROSECONDS
//!
//! Listens on 127.0.0.1 (port 0 picks a free one) and prints the port it
//! listens on. Only the standard library: bin/bench builds it with rustc.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

extern "C" {
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
}

/// Linux's default timer slack (50 us) would add that much to every delay.
const PR_SET_TIMERSLACK: i32 = 29;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: delay_proxy LISTEN_PORT UPSTREAM_HOST:PORT DELAY_MICROSECONDS");
        std::process::exit(2);
    }
    let port: u16 = args[1].parse().expect("LISTEN_PORT");
    let upstream = args[2].clone();
    let delay = Duration::from_micros(args[3].parse().expect("DELAY_MICROSECONDS"));
    // Threads inherit the slack of the thread that creates them.
    unsafe { prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) };

    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind");
    println!("{}", listener.local_addr().expect("local_addr").port());
    for client in listener.incoming().flatten() {
        let upstream = upstream.clone();
        thread::spawn(move || {
            if let Ok(server) = TcpStream::connect(&upstream) {
                relay(client, server, delay);
            }
        });
    }
}

/// Relays both directions of one connection until either side closes.
fn relay(client: TcpStream, server: TcpStream, delay: Duration) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (c2, s2) = match (client.try_clone(), server.try_clone()) {
        (Ok(c), Ok(s)) => (c, s),
        _ => return,
    };
    let up = thread::spawn(move || pipe(client, server, delay));
    pipe(s2, c2, delay);
    let _ = up.join();
}

/// Copies `from` into `to`, each chunk `delay` after it was read.
fn pipe(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer_to = to.try_clone();
    let writer = thread::spawn(move || {
        for (due, chunk) in rx {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.join();
    let _ = from.shutdown(Shutdown::Read);
    if let Ok(to) = writer_to {
        let _ = to.shutdown(Shutdown::Both);
    }
}
