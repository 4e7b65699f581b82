//! burn's GPU backends against burn-flex: the same network computes the same
//! outputs, a training step moves it the same way, and the optimizer state
//! resumes. Built with `--features wgpu` or `--features cuda` only;
//! `scripts/test-gpu.sh` runs the wgpu tests on Mesa's software Vulkan
//! (lavapipe), which needs no GPU.
#![cfg(any(feature = "wgpu", feature = "cuda"))]

use konane_nn::train::{Learner, LearnerConfig, Sample, benchmark_batch};
use konane_nn::{Backend, NetConfig, NetEvaluator, init_net};
use konane_rules::{Position, Size};

/// The GPU backends this build has, each opened through its name as a
/// config or `--backend` would.
fn gpus() -> Vec<Backend> {
    [Backend::Wgpu, Backend::Cuda]
        .into_iter()
        .filter(|backend| backend.is_built())
        .map(|backend| backend.to_string().parse().unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn close(a: &[f32], b: &[f32], tolerance: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tolerance * (1.0 + x.abs()), "{what}[{i}]: {x} vs {y}");
    }
}

#[test]
fn gpu_backends_open_by_name() {
    let gpus = gpus();
    assert!(!gpus.is_empty(), "a GPU feature is on, so a GPU backend must open");
    for backend in gpus {
        assert!(backend.is_built() && backend.is_gpu());
        // Opening twice hands back the same device rather than failing to
        // register the runtime again.
        assert_eq!(backend.to_string().parse::<Backend>(), Ok(backend));
    }
}

#[test]
fn the_network_computes_the_same_outputs_on_the_gpu() {
    let flex = Backend::Flex.device();
    let net = init_net(&NetConfig::new().with_blocks(2).with_channels(16), &flex, 7);
    for gpu in gpus() {
        for size in ["8x8", "5x7", "13x20", "1x3"].map(|s| s.parse::<Size>().unwrap()) {
            let positions: Vec<Position> = benchmark_batch(size, 6).into_iter().map(|s| s.position).collect();
            let (cpu_logits, cpu_values) = NetEvaluator::new(net.clone(), flex.clone()).forward(&positions);
            let mut on_gpu = NetEvaluator::for_backend(&net, gpu);
            assert!(!on_gpu.is_native(), "{gpu} evaluates on the device");
            let (gpu_logits, gpu_values) = on_gpu.forward(&positions);
            close(&cpu_logits, &gpu_logits, 1e-3, &format!("{gpu} {size} logits"));
            close(&cpu_values, &gpu_values, 1e-3, &format!("{gpu} {size} values"));
        }
    }
}

/// A batch of two board sizes, as a mixed-size run trains on.
fn mixed_batch() -> Vec<Sample> {
    let mut batch = benchmark_batch("6x6".parse().unwrap(), 24);
    batch.extend(benchmark_batch("5x7".parse().unwrap(), 8));
    batch
}

#[test]
fn training_steps_on_the_gpu_match_flex() {
    let net = init_net(&NetConfig::tiny(), &Backend::Flex.device(), 3);
    let batch = mixed_batch();
    for gpu in gpus() {
        let mut cpu = Learner::new(net.clone(), Backend::Flex, LearnerConfig::default());
        let mut dev = Learner::new(net.clone(), gpu, LearnerConfig::default());
        let mut first = None;
        for step in 0..5 {
            let (a, b) = (cpu.step(&batch, 1e-3), dev.step(&batch, 1e-3));
            first.get_or_insert(b);
            close(
                &[a.policy, a.value, a.policy_entropy],
                &[b.policy, b.value, b.policy_entropy],
                1e-3,
                &format!("{gpu} step {step} losses"),
            );
        }
        // Five steps on one batch fit it: the device really trained.
        let last = dev.step(&batch, 1e-3);
        assert!(last.policy < first.unwrap().policy, "{gpu}: policy loss {} -> {}", first.unwrap().policy, last.policy);
        let flex = Backend::Flex.device();
        let positions: Vec<Position> = batch.iter().map(|s| s.position).take(24).collect();
        let (cpu_logits, _) = NetEvaluator::new(cpu.inference_net(&flex), flex.clone()).forward(&positions);
        cpu.step(&batch, 1e-3);
        let (gpu_logits, _) = NetEvaluator::new(dev.inference_net(&flex), flex.clone()).forward(&positions);
        let (after_logits, _) = NetEvaluator::new(cpu.inference_net(&flex), flex).forward(&positions);
        close(&after_logits, &gpu_logits, 1e-2, &format!("{gpu} weights after six steps"));
        assert!(
            cpu_logits.iter().zip(&after_logits).any(|(a, b)| (a - b).abs() > 1e-4),
            "the sixth step changed the net"
        );
    }
}

#[test]
fn a_gpu_learner_resumes_from_its_saved_optimizer() {
    let temp = tempfile::tempdir().unwrap();
    let net = init_net(&NetConfig::tiny(), &Backend::Flex.device(), 4);
    let batch = mixed_batch();
    for gpu in gpus() {
        let mut straight = Learner::new(net.clone(), gpu, LearnerConfig::default());
        let mut first = Learner::new(net.clone(), gpu, LearnerConfig::default());
        for _ in 0..3 {
            straight.step(&batch, 1e-3);
            first.step(&batch, 1e-3);
        }
        let path = temp.path().join(format!("{gpu}.optim"));
        first.save_optimizer(&path).unwrap();
        let mut resumed = Learner::new(first.inference_net(&Backend::Flex.device()), gpu, LearnerConfig::default());
        resumed.load_optimizer(&path).unwrap();
        let (a, b) = (straight.step(&batch, 1e-3), resumed.step(&batch, 1e-3));
        close(&[a.policy, a.value], &[b.policy, b.value], 1e-5, &format!("{gpu} losses after resume"));
        let (c, d) = (straight.step(&batch, 1e-3), resumed.step(&batch, 1e-3));
        close(&[c.policy, c.value], &[d.policy, d.value], 1e-4, &format!("{gpu} the step after that"));
    }
}
