//! A TCP relay between a capsule and the tests' Redis that, once, stops a
//! request before Redis sees it: the first chunk a client writes that holds
//! every one of `marks` waits until `meanwhile` has run (on the relay's
//! thread, while the client waits for its reply). For what happens between
//! two round trips of one fetch, which nothing else can time.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

type Meanwhile = Box<dyn FnOnce() + Send>;

/// The marks and what runs before the request holding them, until taken.
type Held = Arc<Mutex<Option<(Vec<Vec<u8>>, Meanwhile)>>>;

/// A relay on a port of its own; its threads end with the test binary.
pub struct Proxy {
    pub port: u16,
}

impl Proxy {
    /// Relays to the Redis on `upstream`; the first request holding all of
    /// `marks` waits for `meanwhile`.
    pub fn start(upstream: u16, marks: Vec<Vec<u8>>, meanwhile: Meanwhile) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(Some((marks, meanwhile))));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let held = held.clone();
                thread::spawn(move || pump(client, server, Some(held)));
                thread::spawn(move || pump(s2, c2, None));
            }
        });
        Proxy { port }
    }
}

/// Copies `from` to `to`, each chunk checked against `held`'s marks (a
/// client's side) first.
fn pump(mut from: TcpStream, mut to: TcpStream, held: Option<Held>) {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        if let Some(held) = &held {
            let mut slot = held.lock().unwrap_or_else(|e| e.into_inner());
            let hit = slot.as_ref().is_some_and(|(marks, _)| {
                marks
                    .iter()
                    .all(|m| chunk.windows(m.len()).any(|w| w == &m[..]))
            });
            if hit {
                let (_, meanwhile) = slot.take().unwrap();
                drop(slot);
                meanwhile();
            }
        }
        if to.write_all(chunk).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
