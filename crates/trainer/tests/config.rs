//! Config parsing: defaults, shipped configs, and errors that name the key.

use std::path::Path;

use konane_trainer::config::{LrSchedule, TrainConfig};
use konane_trainer::memory::MemoryEstimate;
use konane_trainer::replay::SizeMix;

fn error(text: &str) -> String {
    TrainConfig::parse(text, "test.toml").unwrap_err().to_string()
}

#[test]
fn an_empty_config_takes_the_defaults() {
    let config = TrainConfig::parse("", "empty").unwrap();
    assert_eq!(config, TrainConfig::default());
}

#[test]
fn shipped_configs_parse_and_the_quick_one_is_embedded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    for name in ["6x6-quick.toml", "6x6.toml", "8x8.toml", "10x10.toml", "6x6-refine.toml", "8x8-refine.toml"] {
        assert!(names.iter().any(|n| n == name), "{name} missing from configs/");
    }
    for name in &names {
        let config = TrainConfig::load(&root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(config.validate().is_ok(), "{name}");
    }
    // The refine configs continue the shipped networks (`--init-from
    // checkpoints/6x6`), which needs the same shape.
    for size in ["6x6", "8x8"] {
        let config = TrainConfig::load(&root.join(format!("{size}-refine.toml"))).unwrap();
        let net = konane_nn::checkpoint::resolve(&root.join("../checkpoints").join(size)).unwrap();
        let header = konane_nn::checkpoint::read_header(&net).unwrap();
        assert_eq!(header.net, config.network.clone(), "{size}");
        assert_eq!(header.sizes, config.sizes, "{size}");
    }
    // A shipped network keeps the config that made it, which must still
    // parse and describe that network.
    for size in ["6x6", "8x8"] {
        let dir = root.join("../checkpoints").join(size);
        let config = TrainConfig::load(&dir.join("config.toml")).unwrap_or_else(|e| panic!("{size}: {e}"));
        assert!(config.validate().is_ok(), "{size}");
        let header = konane_nn::checkpoint::read_header(&konane_nn::checkpoint::resolve(&dir).unwrap()).unwrap();
        assert_eq!((header.net, header.sizes), (config.network.clone(), config.sizes), "{size}");
    }
    let quick = TrainConfig::quick();
    assert_eq!(quick, TrainConfig::load(&root.join("6x6-quick.toml")).unwrap());
    assert_eq!(quick.sizes, ["6x6".parse().unwrap()]);
}

#[test]
fn an_unknown_key_is_named() {
    let e = error("[selfplay]\ngames = 10\nsimulation = 5\n");
    assert!(e.contains("selfplay.simulation"), "{e}");
    assert!(e.contains("unknown field"), "{e}");
    let e = error("iteratons = 3\n");
    assert!(e.contains("iteratons"), "{e}");
    let e = error("[selfpaly]\ngames = 3\n");
    assert!(e.contains("selfpaly"), "{e}");
}

#[test]
fn a_mistyped_value_names_the_key() {
    let e = error("[training]\nlr = \"fast\"\n");
    assert!(e.contains("training.lr"), "{e}");
    let e = error("backend = \"cuda\"\n");
    assert!(e.contains("backend") && e.contains("cuda"), "{e}");
    let e = error("[training]\nlr_schedule = \"linear\"\n");
    assert!(e.contains("training.lr_schedule"), "{e}");
    let e = error("[training]\nsize_mix = \"both\"\n");
    assert!(e.contains("training.size_mix") && e.contains("mixed"), "{e}");
    let mixed = TrainConfig::parse("[training]\nsize_mix = \"mixed\"\n", "test.toml").unwrap();
    assert_eq!(mixed.training.size_mix, SizeMix::Mixed);
}

#[test]
fn an_out_of_range_value_names_the_key_and_the_reason() {
    for (text, key, reason) in [
        ("[selfplay]\nsimulations = 0\n", "selfplay.simulations", "at least 1"),
        ("[selfplay.search]\ndirichlet_epsilon = 1.5\n", "selfplay.search.dirichlet_epsilon", "[0, 1]"),
        ("[selfplay.search]\ndirichlet_shape = 1.5\n", "selfplay.search.dirichlet_shape", "[0, 1]"),
        ("[selfplay.search]\ndirichlet_shape = nan\n", "selfplay.search.dirichlet_shape", "[0, 1]"),
        ("[selfplay.search]\nforced_playouts = -2.0\n", "selfplay.search.forced_playouts", "[0, 100]"),
        ("[selfplay.search]\nforced_playouts = nan\n", "selfplay.search.forced_playouts", "[0, 100]"),
        ("[selfplay.search]\nroot_policy_temperature = 0\n", "selfplay.search.root_policy_temperature", "[0.1, 10]"),
        ("[selfplay.search]\nroot_policy_temperature = inf\n", "selfplay.search.root_policy_temperature", "[0.1, 10]"),
        ("[training.learner]\nsoft_policy_weight = -1\n", "training.learner.soft_policy_weight", "[0, 100]"),
        ("[training.learner]\nsoft_policy_weight = nan\n", "training.learner.soft_policy_weight", "[0, 100]"),
        ("[training.learner]\nreply_policy_weight = 101\n", "training.learner.reply_policy_weight", "[0, 100]"),
        ("[training.learner]\nreply_policy_weight = nan\n", "training.learner.reply_policy_weight", "[0, 100]"),
        ("sizes = [\"6x\"]\n", "sizes", "6x"),
        ("sizes = []\n", "sizes", "at least one"),
        ("[evaluation]\nopponents = [\"minimax\"]\n", "evaluation.opponents", "unknown player"),
        ("[evaluation]\nopponents = [\"alphabeta:ms=10\"]\n", "evaluation.opponents", "timed"),
        ("[training]\nlr = -1.0\n", "training.lr", "> 0"),
        ("[selfplay]\npolicy_surprise_weight = 1.5\n", "selfplay.policy_surprise_weight", "[0, 1]"),
        ("[selfplay]\npolicy_surprise_weight = nan\n", "selfplay.policy_surprise_weight", "[0, 1]"),
        ("[training]\nmax_draws_per_sample = -1.0\n", "training.max_draws_per_sample", "[0, 1000]"),
        ("[training]\nmax_draws_per_sample = nan\n", "training.max_draws_per_sample", "[0, 1000]"),
        ("[checkpoint]\nkeep_last = 1\n", "checkpoint.keep_last", "at least 2"),
        ("[replay]\nwindow = 10\nmin_samples = 20\n", "replay.min_samples", "exceeds"),
        ("[bootstrap]\nteacher = \"net:init\"\n", "bootstrap.teacher", "baseline"),
        ("[selfplay]\neval_cache = 4194305\n", "selfplay.eval_cache", "4194304"),
        ("name = \"lr=0.01\"\n", "name", "'='"),
        ("name = \"a,b\"\n", "name", "','"),
        ("name = \"a;b\"\n", "name", "';'"),
        ("name = \"a/b\"\n", "name", "slashes"),
    ] {
        let e = error(text);
        assert!(e.contains(key) && e.contains(reason), "{text}: {e}");
        assert!(e.starts_with("test.toml: "), "{e}");
    }
}

#[test]
fn bootstrap_and_schedules_parse() {
    let config = TrainConfig::parse(
        "[bootstrap]\nteacher = \"alphabeta:depth=2\"\npositions = 100\n[training]\nlr_schedule = \"cosine\"\n",
        "t",
    )
    .unwrap();
    assert_eq!(config.bootstrap.unwrap().positions, 100);
    assert_eq!(config.training.lr_schedule, LrSchedule::Cosine);
}

#[test]
fn differing_keys_are_dotted() {
    let a = TrainConfig::default();
    let mut b = a.clone();
    b.training.lr = 0.5;
    b.iterations = 99;
    b.evaluation.opponents.push("greedy".parse().unwrap());
    assert_eq!(a.differing_keys(&b), ["evaluation.opponents", "iterations", "training.lr"]);
    // The stored form round-trips.
    assert_eq!(TrainConfig::parse(&b.to_toml(), "stored").unwrap(), b);
}

/// `docs/training.md` lists every key with its range: a key added to the
/// config without a row there fails here.
#[test]
fn the_config_reference_lists_every_key() {
    fn keys(prefix: &str, value: &toml::Value, out: &mut Vec<String>) {
        match value {
            toml::Value::Table(table) => {
                for (k, v) in table {
                    keys(&if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") }, v, out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }
    let full = TrainConfig { bootstrap: Some(Default::default()), ..TrainConfig::default() };
    let mut all = Vec::new();
    keys("", &toml::Value::try_from(&full).unwrap(), &mut all);
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/training.md")).unwrap();
    assert!(all.len() > 50, "{all:?}");
    for key in all {
        assert!(docs.contains(&format!("| `{key}` |")), "docs/training.md has no row for {key}");
    }
}

/// Configs and run directories from before `[selfplay.search]` and
/// `[training.learner]` held those keys flat; they load as moved.
#[test]
fn the_flat_layout_of_earlier_configs_still_loads() {
    let flat = "[selfplay]\nleaves_per_game = 4\nc_puct = 2.5\nmax_nodes = 5000\n\
                [training]\noptimizer = \"sgd\"\nweight_decay = 0.001\n";
    let nested = "[selfplay.search]\nbatch_size = 4\nc_puct = 2.5\nmax_nodes = 5000\n\
                  [training.learner]\noptimizer = \"sgd\"\nweight_decay = 0.001\n";
    let config = TrainConfig::parse(flat, "flat").unwrap();
    assert_eq!(config, TrainConfig::parse(nested, "nested").unwrap());
    assert_eq!((config.selfplay.search.batch_size, config.selfplay.search.c_puct), (4, 2.5));
    // The keys not given keep the self-play preset, not the player's search.
    assert_eq!(config.selfplay.search.dirichlet_epsilon, konane_mcts::SearchConfig::self_play().dirichlet_epsilon);
    let e = error("[selfplay]\nc_puct = 2.0\n[selfplay.search]\nc_puct = 3.0\n");
    assert!(e.contains("selfplay.c_puct") && e.contains("set twice"), "{e}");
    // The shipped networks' run configs are in the flat layout.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../checkpoints");
    for model in ["6x6", "8x8"] {
        let config = TrainConfig::load(&root.join(model).join("config.toml")).unwrap();
        assert_eq!(config.selfplay.search.c_puct, 1.5, "{model}");
    }
}

/// A config whose every key is in range but whose product is not: a
/// b40c512 network trained on 8,192 20x20 positions a step.
const HUGE_STEP: &str = "sizes = [\"20x20\"]\n[network]\nblocks = 40\nchannels = 512\n[training]\nbatch_size = 8192\n";

fn estimate(text: &str, threads: usize) -> MemoryEstimate {
    let config = TrainConfig::parse(text, "test.toml").unwrap();
    MemoryEstimate::of(&config, threads)
}

#[test]
fn a_run_that_cannot_fit_in_memory_names_the_key_to_lower() {
    const GIB: u64 = 1 << 30;
    // Each part in turn outgrows the machine; the error names the key of
    // the largest part and says how much the run would need.
    let window = "sizes = [\"20x20\"]\n[replay]\nwindow = 10000000\n";
    let trees = "sizes = [\"20x20\"]\n[selfplay]\ngames = 4096\nparallel_games = 4096\nsimulations = 1000000\n";
    for (text, machine, key, part) in [
        (HUGE_STEP, 24, "training.batch_size", "network.channels"),
        (window, 4, "replay.window", "lower replay.window"),
        (trees, 24, "selfplay.parallel_games", "selfplay.simulations"),
    ] {
        // The keys validate: only their product is too much.
        let estimate = estimate(text, 1);
        let e = estimate.check(machine * GIB).unwrap_err();
        assert_eq!(e.key, key, "{text}");
        assert!(e.reason.contains(&format!("{machine}.0 GiB")) && e.reason.contains(part), "{e}");
        assert!(e.reason.contains(&konane_trainer::memory::gib(estimate.total())), "{e}");
        // The same run fits a machine of its estimate.
        assert!(estimate.check(estimate.total()).is_ok(), "{text}");
    }
    // A learner leaves self-play to its workers, and a worker holds only
    // self-play: the trees that sink the whole run do not sink a learner.
    let whole = estimate(trees, 1);
    assert!(whole.without_selfplay().check(GIB).is_ok());
    assert!(whole.selfplay_only().check(24 * GIB).is_err());
    assert!(estimate(HUGE_STEP, 1).selfplay_only().check(GIB).is_ok());
    // Every key at its largest neither overflows nor fits anywhere.
    let largest = "sizes = [\"20x20\"]\n[network]\nblocks = 40\nchannels = 512\npolicy_channels = 512\n\
                   value_channels = 512\nvalue_hidden = 4096\nsoft_policy = true\nreply_policy = true\n\
                   [selfplay]\ngames = 1000000\nparallel_games = 4096\nsimulations = 1000000\neval_cache = 4194304\n\
                   [selfplay.search]\nmax_nodes = 67108864\n[replay]\nwindow = 10000000\n\
                   [training]\nbatch_size = 8192\n";
    let all = estimate(largest, 8);
    assert!(all.total() > 1 << 45 && all.total() < u64::MAX, "{all:?}");
}

#[test]
fn the_memory_estimate_follows_the_shapes_and_passes_the_shipped_configs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    for entry in std::fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let config = TrainConfig::load(&path).unwrap();
            // Every shipped config runs on a 4 GiB machine, on two cores.
            let estimate = MemoryEstimate::of(&config, 2);
            assert!(estimate.total() < 4 << 30, "{}: {estimate:?}", path.display());
        }
    }
    // The 8x8 recipe on two cores peaked at 159-249 MiB resident in its
    // iterations (its metrics.jsonl), the program itself included (about
    // 40 MiB): the estimate is of that order.
    let recipe = TrainConfig::load(&root.join("8x8.toml")).unwrap();
    let mib = MemoryEstimate::of(&recipe, 2).total() >> 20;
    assert!((60..=500).contains(&mib), "{mib} MiB");
    // The training step grows with each of batch, board, width and depth.
    let step = |text: &str| estimate(text, 1).training;
    let base = step("sizes = [\"8x8\"]\n");
    for text in [
        "sizes = [\"8x8\"]\n[training]\nbatch_size = 512\n",
        "sizes = [\"10x10\"]\n",
        "sizes = [\"8x8\"]\n[network]\nchannels = 96\n",
        "sizes = [\"8x8\"]\n[network]\nblocks = 8\n",
        "sizes = [\"8x8\"]\n[network]\nvalue_hidden = 4096\n",
        "sizes = [\"8x8\"]\nbackend = \"flex\"\n",
    ] {
        assert!(step(text) > base, "{text}");
    }
    assert!(step(HUGE_STEP) > 1 << 40, "terabytes for the step");
}
