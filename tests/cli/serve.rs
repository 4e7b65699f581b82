//! `konane serve` as a user starts it: the shipped networks, a port of its
//! own choosing printed on standard output, the API answering there; and
//! `konane bench-serve`'s report.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{fails_with, konane, konane_command, text};

/// One HTTP/1.1 request on a fresh connection; the status line and body.
fn http(address: &str, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.lines().next().unwrap_or_default().to_string();
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// The server process, killed when dropped (a failed assertion included).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_answers_on_the_port_it_prints_with_the_shipped_networks() {
    let mut child = konane_command()
        .args(["serve", "--port", "0", "--search-threads", "1"])
        .env("KONANE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = KillOnDrop(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    assert!(address.starts_with("127.0.0.1:"), "binds 127.0.0.1 unless told otherwise: {line}");
    let (status, body) = http(&address, "GET /api/v1/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(status.contains("200"), "{status}");
    let info: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = info["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["6x6", "konane"]);
    // Each board is played by the shipped network chosen for its size.
    for (size, model, removals) in [
        ("6x6", "6x6", &["c3", "d4", "a1", "f6"]),
        ("8x8", "konane", &["d4", "e5", "a1", "h8"]),
        ("10x10", "konane", &["e5", "f6", "a1", "j10"]),
    ] {
        let game = format!(r#"{{"size": "{size}", "opponent": {{"kind": "network", "sims": 50}}, "human": "white"}}"#);
        let request = format!(
            "POST /api/v1/games HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{game}",
            game.len()
        );
        let (status, body) = http(&address, &request);
        assert!(status.contains("201"), "{status}: {body}");
        let game: serde_json::Value = serde_json::from_str(&body).unwrap();
        let id = game["id"].as_str().unwrap();
        let request = format!(
            "POST /api/v1/games/{id}/genmove HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        );
        let (status, body) = http(&address, &request);
        assert!(status.contains("200"), "{status}: {body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["analysis"]["model"], model, "{size}");
        assert!(removals.contains(&answer["move"].as_str().unwrap()), "{answer}");
    }
    let (status, page) = http(&address, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(status.contains("200") && page.contains("<title>"), "{status}");
}

#[test]
fn serve_refuses_bad_options_before_it_listens() {
    fails_with(&konane(&["serve", "--max-sims", "0"]), &["--max-sims", "1..=10000000"]);
    fails_with(&konane(&["serve", "--port", "70000"]), &["--port"]);
    fails_with(&konane(&["serve", "--bind", "localhost:80"]), &["--bind"]);
    fails_with(&konane(&["serve", "--rate", "0"]), &["--rate"]);
    fails_with(&konane(&["serve", "--model", "no/such/net"]), &["--model no/such/net", "no/such/net"]);
    fails_with(
        &konane(&["serve", "--model", "a=checkpoints/6x6", "--model", "a=checkpoints/8x8"]),
        &["second model named 'a'"],
    );
}

#[test]
fn bench_serve_reports_rates_and_latencies_without_errors() {
    let output = konane(&[
        "bench-serve",
        "--clients",
        "4",
        "--seconds",
        "2",
        "--size",
        "4x4",
        "--sims",
        "8",
        "--analysis-sims",
        "8",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("4 clients"), "{stdout}");
    assert!(stdout.contains("latency ms: p50 "), "{stdout}");
    assert!(stdout.contains("errors: 0"), "{stdout}");
}
