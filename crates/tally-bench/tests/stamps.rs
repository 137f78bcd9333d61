//! A body frame is stamped when the client reads it off the socket, not when the request's task
//! next happens to run (docs/bench.md#stamps). A raw TCP server writes the first token at a known
//! instant while a "hog" task on the client's one-thread runtime blocks the thread for 100 ms at a
//! time: the read can happen only when a hog turn ends, and the stamp must be taken right then,
//! not one more hog turn later (which is what a hand-off from a separate connection task costs).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tally_bench::client::exchange::{ExchangeContext, execute};
use tally_bench::client::{Pool, RunClock};
use tally_bench::record::{Phase, RequestRecord, Status};

/// How long each turn of the hog task blocks the client's thread.
const HOG: Duration = Duration::from_millis(100);

/// Reads one request (head and `content-length` body).
fn read_request(stream: &mut TcpStream) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the client closed before its request was whole");
        seen.extend_from_slice(&buf[..n]);
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if seen.len() >= end + 4 + length {
                return;
            }
        }
    }
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// Serves one streamed answer; returns the instants just before the first token was written and
/// just after it was in the client's socket.
fn serve_one(listener: TcpListener) -> (Instant, Instant) {
    let (mut stream, _) = listener.accept().unwrap();
    stream.set_nodelay(true).unwrap();
    read_request(&mut stream);
    stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let token =
        b"data: {\"id\":\"r\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
    let before = Instant::now();
    stream.write_all(&chunk(token)).unwrap();
    // On loopback the bytes are in the client's receive buffer when write returns.
    let written = Instant::now();
    std::thread::sleep(Duration::from_millis(150));
    let mut end = chunk(b"data: [DONE]\n\n");
    end.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&end).unwrap();
    let _ = stream.read(&mut [0u8; 64]);
    (before, written)
}

#[test]
fn a_frame_is_stamped_at_its_socket_read_not_at_a_later_poll() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || serve_one(listener));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let hog_turn_ends = Arc::new(Mutex::new(Vec::new()));
    let clock = RunClock::start();
    let record = runtime.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let hog = tokio::spawn({
            let (stop, ends) = (stop.clone(), hog_turn_ends.clone());
            async move {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(HOG);
                    ends.lock().unwrap().push(Instant::now());
                    tokio::task::yield_now().await;
                }
            }
        });
        let ctx = ExchangeContext {
            pool: Pool::new(addr, true, Duration::from_secs(10)),
            authority: addr.to_string(),
            path: "/v1/chat/completions".into(),
            api_key: None,
            clock,
            inactivity: Duration::from_secs(10),
            stream: true,
            extra_headers: Vec::new(),
        };
        let mut record = RequestRecord::new(Phase::Measured, 0, "tally-t-0".into(), 0);
        record.target_output_tokens = 1;
        let exchange = execute(&ctx, Bytes::from_static(b"{}"), &mut record);
        let finished = tokio::time::timeout(Duration::from_secs(20), exchange).await;
        assert!(finished.is_ok(), "the exchange did not end within 20 s");
        stop.store(true, Ordering::Relaxed);
        hog.await.unwrap();
        record
    });
    let (before, written) = server.join().unwrap();
    assert_eq!(record.status, Status::Ok, "{:?}", record.error_message);
    let stamp = clock.instant(record.first_token_ns.expect("a first token"));
    // The first moment the client's thread was free to read the token.
    let free = *hog_turn_ends
        .lock()
        .unwrap()
        .iter()
        .find(|&&end| end >= written)
        .expect("a hog turn ended after the token was written");
    assert!(stamp >= before, "stamped before the token was written");
    assert!(
        stamp < free + HOG / 2,
        "stamped {:?} after the thread was free to read it (one hog turn is {HOG:?}): \
         the stamp waited for a later poll",
        stamp.duration_since(free)
    );
}
