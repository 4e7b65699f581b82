//! Does a run of several board sizes learn faster from batches of one size
//! or from batches that mix them? A supervised test on a fixed window: the
//! newest tenth of a run's replay window is held out, two learners start
//! from the same network and take the same number of steps on the rest,
//! one with `size_mix = "one_size"`, one with `"mixed"`, and both are
//! scored on the held-out positions of every size as they go.
//!
//!     cargo run --release --example size_mix -- RUN/replay.bin NET.knet [STEPS] [SEEDS] [LR]
//!
//! Prints one line per checkpoint of each learner: step, mode, seed, then
//! held-out policy and value loss per size and their sample-weighted mean.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use konane_nn::Backend;
use konane_nn::checkpoint;
use konane_nn::train::{Learner, LearnerConfig, Sample};
use konane_rules::Symmetry;
use konane_trainer::replay::{ReplayBuffer, SizeMix};
use konane_trainer::training::{StepPlan, train_steps};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Held-out positions of one size, in batches the learner can score.
struct HeldOut {
    size: String,
    batches: Vec<Vec<Sample>>,
    samples: usize,
}

/// Policy and value loss of `learner`'s network on each held-out size
/// (a fresh learner at learning rate 0: its losses are those before the step).
fn score(learner: &Learner, held_out: &[HeldOut]) -> Vec<(f64, f64)> {
    let net = learner.inference_net(&Backend::Native.device());
    let mut scorer = Learner::new(net, Backend::Native, LearnerConfig::default());
    scorer.set_threads(2);
    held_out
        .iter()
        .map(|part| {
            let (mut policy, mut value) = (0.0, 0.0);
            for batch in &part.batches {
                let losses = scorer.step(batch, 0.0);
                policy += f64::from(losses.policy) * batch.len() as f64;
                value += f64::from(losses.value) * batch.len() as f64;
            }
            (policy / part.samples as f64, value / part.samples as f64)
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    anyhow::ensure!(args.len() >= 2, "usage: size_mix REPLAY NET [STEPS] [SEEDS] [LR]");
    let replay = PathBuf::from(&args[0]);
    let net_path = PathBuf::from(&args[1]);
    let steps: u64 = args.get(2).map_or(Ok(400), |s| s.parse()).context("STEPS")?;
    let seeds: u64 = args.get(3).map_or(Ok(2), |s| s.parse()).context("SEEDS")?;
    let lr: f64 = args.get(4).map_or(Ok(3e-4), |s| s.parse()).context("LR")?;
    anyhow::ensure!((1..=100_000).contains(&steps) && (1..=16).contains(&seeds), "STEPS 1..=100000, SEEDS 1..=16");
    anyhow::ensure!(lr.is_finite() && lr > 0.0 && lr < 1.0, "LR in (0, 1)");

    let window = ReplayBuffer::load(&replay, 10_000_000)?;
    let samples = window.into_samples();
    let split = samples.len() - samples.len() / 10;
    let mut train = ReplayBuffer::new(split);
    train.extend(samples[..split].iter().cloned());
    let mut by_size: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    for sample in &samples[split..] {
        by_size.entry(sample.size().to_string()).or_default().push(sample.unpack(Symmetry::Identity));
    }
    let held_out: Vec<HeldOut> = by_size
        .into_iter()
        .map(|(size, all)| HeldOut { size, samples: all.len(), batches: all.chunks(256).map(<[_]>::to_vec).collect() })
        .collect();
    let total: usize = held_out.iter().map(|p| p.samples).sum();
    println!(
        "# {} training samples, held out: {}",
        train.len(),
        held_out.iter().map(|p| format!("{} {}", p.size, p.samples)).collect::<Vec<_>>().join(", ")
    );
    println!(
        "step\tmode\tseed\t{}\tmean policy\tmean value",
        held_out.iter().map(|p| format!("{0} policy\t{0} value", p.size)).collect::<Vec<_>>().join("\t")
    );

    let (net, _) = checkpoint::load(&net_path, &Backend::Native.device())?;
    let stop = AtomicBool::new(false);
    let every = (steps / 4).max(1);
    for seed in 1..=seeds {
        for mix in [SizeMix::OneSize, SizeMix::Mixed] {
            let mut learner = Learner::new(net.clone(), Backend::Native, LearnerConfig::default());
            learner.set_threads(2);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut done = 0;
            while done <= steps {
                let scores = score(&learner, &held_out);
                let policy: f64 = scores.iter().zip(&held_out).map(|((p, _), h)| p * h.samples as f64).sum();
                let value: f64 = scores.iter().zip(&held_out).map(|((_, v), h)| v * h.samples as f64).sum();
                let cells: Vec<String> = scores.iter().map(|(p, v)| format!("{p:.4}\t{v:.4}")).collect();
                println!(
                    "{done}\t{mix:?}\t{seed}\t{}\t{:.4}\t{:.4}",
                    cells.join("\t"),
                    policy / total as f64,
                    value / total as f64
                );
                if done == steps {
                    break;
                }
                let plan = StepPlan {
                    steps: every.min(steps - done),
                    batch_size: 256,
                    augment: true,
                    size_mix: mix,
                    stop: &stop,
                    book: None,
                };
                train_steps(&train, &mut learner, &plan, &mut rng, |_| lr, |_, _, _| {})?;
                done += plan.steps;
            }
        }
    }
    Ok(())
}
