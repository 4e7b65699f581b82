//! The network end to end on tiny shapes: any board size from one set of
//! weights, evaluation through the search's interface, training that learns,
//! and checkpoint files that either load exactly or fail clearly.

use std::fs;

use konane_mcts::{Batch, Evaluator};
use konane_nn::checkpoint::{self, CheckpointError, FORMAT_VERSION, NetHeader};
use konane_nn::encoding::policy_len;
use konane_nn::train::{Learner, LearnerConfig, Sample};
use konane_nn::{Backend, NetConfig, NetEvaluator, init_net};
use konane_rules::{Position, Size};

fn header(config: &NetConfig) -> NetHeader {
    NetHeader {
        format: FORMAT_VERSION,
        net: config.clone(),
        sizes: vec!["6x6".parse().unwrap()],
        iteration: 0,
        note: "test".into(),
    }
}

/// Positions along a game that cycles through the legal moves.
fn positions(size: Size, count: usize) -> Vec<Position> {
    let mut out = Vec::new();
    let mut position = Position::start(size);
    let mut ply = 0;
    while out.len() < count && !position.is_over() {
        out.push(position);
        let moves = position.moves();
        position.play_unchecked(moves[(ply * 5 + 1) % moves.len()]);
        ply += 1;
    }
    out
}

#[test]
fn one_set_of_weights_evaluates_every_size() {
    let device = Backend::Flex.device();
    let mut evaluator = NetEvaluator::new(init_net(&NetConfig::tiny(), &device, 3), device);
    for size in ["4x4", "8x8", "13x20", "1x3"].map(|s| s.parse::<Size>().unwrap()) {
        let batch = positions(size, 3);
        let (logits, values) = evaluator.forward(&batch);
        assert_eq!(logits.len(), batch.len() * policy_len(size), "{size}");
        assert_eq!(values.len(), batch.len());
        assert!(values.iter().all(|v| v.abs() < 1.0));
    }
}

#[test]
fn multiply_adds_count_every_weight_once_per_cell() {
    use burn::module::Module;
    use konane_nn::encoding::MOVE_KINDS;
    for config in [NetConfig::tiny(), NetConfig::new()] {
        let net = init_net(&config, &Backend::Flex.device(), 1);
        // On one cell every weight is one multiply-add; biases and the
        // residual gates are the parameters that are not.
        let (c, b) = (config.channels, config.blocks);
        let not_multiplied =
            c + b * (2 * c + 1) + config.policy_channels + MOVE_KINDS + config.value_channels + config.value_hidden + 1;
        let weights = (net.num_params() - not_multiplied) as u64;
        assert_eq!(config.multiply_adds(1, 1), weights, "{}", config.name());
        // The value head's dense layers run once per board, the rest per cell.
        let dense = (2 * config.value_channels * config.value_hidden + config.value_hidden) as u64;
        assert_eq!(config.multiply_adds(8, 8), 64 * (weights - dense) + dense, "{}", config.name());
    }
}

#[test]
fn evaluator_gives_a_distribution_over_legal_moves_in_mixed_batches() {
    let device = Backend::Flex.device();
    let mut evaluator = NetEvaluator::new(init_net(&NetConfig::tiny(), &device, 3), device);
    let mut list = positions("6x6".parse().unwrap(), 4);
    list.extend(positions("5x7".parse().unwrap(), 3));
    let batch = &mut batch_of(&list);
    evaluator.evaluate(batch).unwrap();
    assert_eq!(batch.outputs(), list.len());
    for (i, position) in list.iter().enumerate() {
        let (_, priors) = batch.output(i);
        assert_eq!(priors.len(), position.count_moves() as usize, "{position}");
        let sum: f32 = priors.iter().sum();
        assert!((sum - 1.0).abs() < 1e-4, "{position}: priors sum to {sum}");
    }
}

fn batch_of(positions: &[Position]) -> Batch {
    let mut batch = Batch::new();
    for &position in positions {
        batch.push(position);
    }
    batch
}

#[test]
fn both_backends_compute_the_same_network() {
    let flex = Backend::Flex.device();
    let net = init_net(&NetConfig::tiny(), &flex, 5);
    let batch = positions("6x6".parse().unwrap(), 5);
    let (flex_logits, flex_values) = NetEvaluator::new(net.clone(), flex).forward(&batch);
    let ndarray = Backend::Ndarray.device();
    let mut on_ndarray = NetEvaluator::new(net.to_device(&ndarray), ndarray);
    let (nd_logits, nd_values) = on_ndarray.forward(&batch);
    assert_eq!((flex_logits.len(), flex_values.len()), (nd_logits.len(), nd_values.len()));
    assert_eq!(flex_values.len(), batch.len());
    for (a, b) in flex_logits.iter().zip(&nd_logits).chain(flex_values.iter().zip(&nd_values)) {
        assert!((a - b).abs() < 1e-4, "{a} vs {b}");
    }
}

#[test]
fn the_native_kernels_evaluate_shipped_networks_as_burn_does() {
    // Trained weights (gates far from zero, real activations), through the
    // search's interface: the priors and values the search would see.
    let device = Backend::Flex.device();
    for (dir, sizes) in [("6x6", ["6x6", "5x5"]), ("8x8", ["8x8", "7x9"])] {
        let file = format!("{}/../../checkpoints/{dir}/net.knet", env!("CARGO_MANIFEST_DIR"));
        let (net, _) = checkpoint::load(std::path::Path::new(&file), &device).unwrap();
        let mut burn = NetEvaluator::new(net.clone(), device.clone());
        let mut native = NetEvaluator::native(&net);
        assert!(native.is_native() && !burn.is_native());
        for size in sizes {
            let list = positions(size.parse().unwrap(), 40);
            let (mut by_burn, mut by_native) = (batch_of(&list), batch_of(&list));
            burn.evaluate(&mut by_burn).unwrap();
            native.evaluate(&mut by_native).unwrap();
            assert_eq!((by_native.outputs(), by_burn.outputs()), (list.len(), list.len()), "{dir} on {size}");
            let mut burn_values = Vec::new();
            for i in 0..list.len() {
                let ((value, priors), (burn_value, burn_priors)) = (by_native.output(i), by_burn.output(i));
                assert_eq!(priors.len(), burn_priors.len(), "{dir} on {size}");
                for (a, b) in std::iter::once((&value, &burn_value)).chain(priors.iter().zip(burn_priors)) {
                    assert!((a - b).abs() < 1e-4, "{dir} on {size}: {a} vs {b}");
                }
                burn_values.push(burn_value);
            }
            let spread = burn_values.iter().fold(0.0f32, |m, v| m.max((v - burn_values[0]).abs()));
            assert!(spread > 0.05, "{dir} on {size}: the values should vary along a game");
        }
    }
}

use burn::module::Module;

#[test]
fn save_then_load_gives_identical_outputs() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let device = Backend::Flex.device();
    let net = init_net(&NetConfig::tiny(), &device, 9);
    let path = dir.join("net.knet");
    checkpoint::save(&net, &header(&NetConfig::tiny()), &path).unwrap();
    let (loaded, read_header) = checkpoint::load(&path, &device).unwrap();
    assert_eq!(read_header, header(&NetConfig::tiny()));
    let batch = positions("6x6".parse().unwrap(), 6);
    let before = NetEvaluator::new(net, device.clone()).forward(&batch);
    let after = NetEvaluator::new(loaded, device).forward(&batch);
    assert_eq!(before, after, "bit-identical after a round trip");
}

#[test]
fn training_only_outputs_are_saved_only_when_on_and_play_never_reads_them() {
    use konane_nn::encoding::MOVE_KINDS;
    let temp = tempfile::tempdir().unwrap();
    let device = Backend::Flex.device();
    let plain = init_net(&NetConfig::tiny(), &device, 9);
    let batch = positions("6x6".parse().unwrap(), 6);
    let outputs = |net| NetEvaluator::new(net, device.clone()).forward(&batch);
    let plain_path = temp.path().join("plain.knet");
    checkpoint::save(&plain, &header(&NetConfig::tiny()), &plain_path).unwrap();
    let contains = |path: &std::path::Path, key: &[u8]| fs::read(path).unwrap().windows(key.len()).any(|w| w == key);
    let extra = NetConfig::tiny().policy_channels * MOVE_KINDS + MOVE_KINDS;
    for (soft, reply) in [(true, false), (false, true), (true, true)] {
        let config = NetConfig::tiny().with_soft_policy(soft).with_reply_policy(reply);
        let net = plain.clone().with_training_outputs_of(&config, &device, 4);
        assert_eq!(net.config(), config);
        assert_eq!(net.num_params(), plain.num_params() + extra * (soft as usize + reply as usize));
        assert_eq!(config.parameters(), net.num_params() as u64);
        assert_eq!(config.multiply_adds(8, 8), NetConfig::tiny().multiply_adds(8, 8), "play does not compute them");
        // Saved and loaded with its heads; a network without one writes no
        // trace of the setting, so its files stay as they were.
        let path = temp.path().join(format!("{soft}-{reply}.knet"));
        checkpoint::save(&net, &header(&config), &path).unwrap();
        let (loaded, read_header) = checkpoint::load(&path, &device).unwrap();
        assert_eq!((read_header.net.clone(), loaded.config()), (config.clone(), config.clone()));
        for (on, key) in [(soft, &b"soft_policy"[..]), (reply, &b"reply_policy"[..])] {
            assert_eq!(contains(&path, key), on);
            assert!(!contains(&plain_path, key));
        }
        // Play reads the same outputs with or without them, and dropping
        // them gives back the plain network's weights.
        assert_eq!(outputs(loaded.clone()), outputs(plain.clone()));
        let dropped = loaded.with_training_outputs_of(&NetConfig::tiny(), &device, 0);
        assert_eq!(dropped.config(), NetConfig::tiny());
        assert_eq!(dropped.num_params(), plain.num_params());
    }
}

/// `file` with its header replaced by `header` (lengths and checksum made
/// right), whatever the weights it holds.
fn with_header(file: &[u8], header: &NetHeader) -> Vec<u8> {
    let magic = b"KONANE-NET\n".len();
    let old_len = u32::from_le_bytes(file[magic + 4..magic + 8].try_into().unwrap()) as usize;
    let json = serde_json::to_vec(header).unwrap();
    let mut out = file[..magic + 4].to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&file[magic + 8 + old_len..file.len() - 4]);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn damaged_or_foreign_files_fail_with_the_file_and_the_reason() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let device = Backend::Flex.device();
    let path = dir.join("net.knet");
    checkpoint::save(&init_net(&NetConfig::tiny(), &device, 1), &header(&NetConfig::tiny()), &path).unwrap();
    let good = fs::read(&path).unwrap();
    let check = |bytes: &[u8], expected: &str| {
        let bad = dir.join("bad.knet");
        fs::write(&bad, bytes).unwrap();
        let err = checkpoint::load(&bad, &device).expect_err("must fail").to_string();
        assert!(err.contains("bad.knet") && err.contains(expected), "{err}");
    };
    check(&good[..good.len() / 2], "truncated");
    check(&good[..10], "magic");
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    check(&flipped, "checksum");
    let mut version = good.clone();
    version[11] = 99;
    check(&version, "format version 99");
    check(b"hello world, not a network", "magic");
    let missing = checkpoint::load(&dir.join("nope.knet"), &device).err().unwrap();
    assert!(matches!(missing, CheckpointError::Io { .. }), "{missing}");
    // A header that describes another shape than the weights hold.
    let other = NetConfig::tiny().with_blocks(2);
    // The writer refuses such a file, so it is made by swapping the header.
    assert!(checkpoint::to_bytes(&init_net(&NetConfig::tiny(), &device, 1), &header(&other)).is_err());
    let weights = checkpoint::to_bytes(&init_net(&NetConfig::tiny(), &device, 1), &header(&NetConfig::tiny())).unwrap();
    let mismatched = dir.join("mismatch.knet");
    fs::write(&mismatched, with_header(&weights, &header(&other))).unwrap();
    let err = checkpoint::load(&mismatched, &device).err().unwrap().to_string();
    assert!(err.contains("mismatch.knet") && err.contains("b2c8"), "{err}");
}

#[test]
fn directories_resolve_through_their_latest_pointer() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let device = Backend::Flex.device();
    let file = dir.join("iter-3").join("net.knet");
    checkpoint::save(&init_net(&NetConfig::tiny(), &device, 1), &header(&NetConfig::tiny()), &file).unwrap();
    assert!(checkpoint::resolve(dir).is_err(), "no LATEST yet");
    checkpoint::set_latest(dir, std::path::Path::new("iter-3/net.knet")).unwrap();
    assert_eq!(checkpoint::resolve(dir).unwrap(), file);
}

#[test]
fn training_steps_fit_a_fixed_batch() {
    let net = init_net(&NetConfig::tiny(), &Backend::Flex.device(), 2);
    let mut learner = Learner::new(net, Backend::Flex, LearnerConfig::default());
    let batch: Vec<Sample> = positions("5x5".parse().unwrap(), 8)
        .into_iter()
        .enumerate()
        .map(|(i, position)| {
            let moves = position.moves();
            let value = if i % 2 == 0 { 0.8 } else { -0.8 };
            Sample { position, policy: vec![(moves[0], 1.0)], value, reply: Vec::new() }
        })
        .collect();
    let first = learner.step(&batch, 3e-3);
    let mut last = first;
    for _ in 0..200 {
        last = learner.step(&batch, 3e-3);
    }
    assert!(last.policy < first.policy * 0.5, "policy loss {} -> {}", first.policy, last.policy);
    assert!(last.value < first.value * 0.5, "value loss {} -> {}", first.value, last.value);
    let net = learner.inference_net(&Backend::Flex.device());
    assert_eq!(net.num_params(), init_net(&NetConfig::tiny(), &Backend::Flex.device(), 2).num_params());
}

#[test]
fn net_specs_tune_the_search_and_a_fixed_batch_stays_fixed() {
    use konane_mcts::SearchConfig;
    use konane_nn::player::{LEAVES_PER_EVALUATOR_THREAD, NetFactory};
    let defaults = SearchConfig::default();
    let spec: konane_nn::spec::PlayerSpec = "net:init,sims=50,c=2.5,fpu=0.1,batch=3".parse().unwrap();
    let player = NetFactory::from_spec(&spec, Backend::Flex).unwrap().with_evaluator_threads(2).build_player(1);
    let config = player.search().config();
    assert_eq!((config.c_puct, config.fpu_reduction, config.batch_size), (2.5, 0.1, 3));
    let spec: konane_nn::spec::PlayerSpec = "net:init,sims=50".parse().unwrap();
    let player = NetFactory::from_spec(&spec, Backend::Flex).unwrap().with_evaluator_threads(1).build_player(1);
    let config = player.search().config();
    assert_eq!((config.c_puct, config.fpu_reduction), (defaults.c_puct, defaults.fpu_reduction));
    assert_eq!(config.batch_size, 1, "one evaluator searches one leaf at a time");
    let player = NetFactory::from_spec(&spec, Backend::Flex).unwrap().with_evaluator_threads(2).build_player(1);
    let config = player.search().config();
    assert_eq!(config.batch_size, LEAVES_PER_EVALUATOR_THREAD * 2, "two evaluator threads share a batch");
}

#[test]
fn a_deepened_network_computes_what_it_did_and_its_new_blocks_train() {
    let device = Backend::Flex.device();
    let shallow = init_net(&NetConfig::tiny(), &device, 3);
    let deep = shallow.clone().deepened_to(3, &device, 9);
    assert_eq!(deep.config(), NetConfig::tiny().with_blocks(3));
    assert_eq!(deep.clone().deepened_to(2, &device, 9).config().blocks, 3, "never shallower");
    // The new blocks are identities: the same outputs, bit for bit.
    let batch = positions("6x6".parse().unwrap(), 6);
    let before = NetEvaluator::new(shallow.clone(), device.clone()).forward(&batch);
    assert_eq!(NetEvaluator::new(deep.clone(), device.clone()).forward(&batch), before);
    // They train: one step apart, the two networks differ, which they would
    // not if the new blocks stayed identities (through them the old weights
    // see the same gradients as without them).
    let samples: Vec<Sample> = batch
        .iter()
        .enumerate()
        .map(|(i, &position)| {
            let moves = position.moves();
            Sample { position, policy: vec![(moves[i % moves.len()], 1.0)], value: 0.5, reply: Vec::new() }
        })
        .collect();
    let mut trained = [shallow, deep].map(|net| Learner::new(net, Backend::Flex, LearnerConfig::default()));
    for learner in &mut trained {
        learner.step(&samples, 3e-3);
    }
    let outputs =
        trained.each_ref().map(|l| NetEvaluator::new(l.inference_net(&device), device.clone()).forward(&batch));
    assert_ne!(outputs[0], outputs[1], "the new blocks joined in");
}

/// A sample without a policy target (a lost solved opening, where every
/// move loses) trains the value alone, on burn and on the native kernels:
/// no policy loss, and the value still fits.
#[test]
fn a_sample_without_a_policy_target_trains_the_value_alone() {
    for backend in [Backend::Flex, Backend::Native] {
        let net = init_net(&NetConfig::tiny(), &Backend::Flex.device(), 3);
        let mut learner = Learner::new(net, backend, LearnerConfig::default());
        let batch: Vec<Sample> = positions("5x5".parse().unwrap(), 8)
            .into_iter()
            .enumerate()
            .map(|(i, position)| {
                let value = if i % 2 == 0 { 0.8 } else { -0.8 };
                Sample { position, policy: Vec::new(), value, reply: Vec::new() }
            })
            .collect();
        let first = learner.step(&batch, 3e-3);
        let mut last = first;
        for _ in 0..200 {
            last = learner.step(&batch, 3e-3);
            assert_eq!(last.policy, 0.0, "{backend:?}: no policy target, no policy loss");
        }
        assert_eq!(first.policy, 0.0, "{backend:?}");
        assert!(
            last.value.is_finite() && last.value < first.value * 0.5,
            "{backend:?}: value loss {} -> {}",
            first.value,
            last.value
        );
    }
}
