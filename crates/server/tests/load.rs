//! A short load test: clients playing whole games and asking for analyses
//! at once, over real connections to 127.0.0.1. No request fails and every
//! game holds exactly the moves its client made (`konane bench-serve` runs
//! the long version for docs/performance.md).

use std::time::Duration;

use konane_mcts::SearchPatch;
use konane_nn::player::NetFactory;
use konane_nn::{Backend, NetConfig};
use konane_players::Limits;
use konane_server::engine::{Engines, Model};
use konane_server::load::{LoadConfig, run_local};
use konane_server::{App, ServerLimits};

#[test]
fn concurrent_clients_get_their_own_games_and_no_errors() {
    let config = NetConfig::tiny();
    let net = konane_nn::init_net(&config, &Backend::Native.device(), 1);
    let limits = Limits { nodes: Some(16), ..Limits::default() };
    let factory = NetFactory::tuned(net, Backend::Native, limits, SearchPatch::default(), 1, "tiny".into()).unwrap();
    let model = Model { name: "tiny".into(), trained_on: vec![], iteration: 0, factory };
    let limits = ServerLimits { rate: 100_000, ..ServerLimits::default() };
    let app = App::new(Engines::new(vec![model], 2), limits);
    let load = LoadConfig {
        base: String::new(),
        clients: 12,
        duration: Duration::from_secs(4),
        size: "5x5".into(),
        sims: 16,
        analysis_sims: 32,
        seed: 1,
    };
    let report = run_local(std::sync::Arc::clone(&app), load).unwrap();
    assert!(report.errors.is_empty(), "{:?}", &report.errors[..report.errors.len().min(5)]);
    assert!(report.games_finished >= 12, "every client finished a game of 5x5 in 4 s: {}", report.games_finished);
    assert!(report.requests > report.games_finished * 4);
    assert_eq!(report.latencies_ms.len() as u64, report.requests);
    assert!(report.percentile_ms(0.5) <= report.percentile_ms(0.99));
    assert!(app.games().is_empty(), "every client deleted its games, abandoned ones included");
}
