//! The native kernels limited to AVX2 (`konane --simd avx2`) against burn
//! and against the widest kernels, in a test binary of its own: the limit
//! holds for the whole process, so no other test may run beside it.

use burn::tensor::{Tensor, TensorData};
use konane_nn::encoding::{INPUT_PLANES, write_planes};
use konane_nn::native::simd::{self, Simd};
use konane_nn::shipped::MODELS;
use konane_nn::train::{Learner, LearnerConfig, OptimizerKind, Sample};
use konane_nn::{Backend, NativeNet, Net, checkpoint};
use konane_rules::Size;
use konane_rules::sample::cycled_positions;

/// The largest difference between two equally long lists.
fn worst(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Policy logits and values of `net` on `batch` positions of `size`, on
/// the native kernels as [`simd`] allows them now.
fn native(net: &Net, size: Size, batch: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let positions = cycled_positions(size, batch);
    let stride = INPUT_PLANES * size.cells();
    let mut planes = vec![0.0; positions.len() * stride];
    for (position, out) in positions.iter().zip(planes.chunks_exact_mut(stride)) {
        write_planes(position, out);
    }
    let (mut policy, mut values) = (Vec::new(), Vec::new());
    NativeNet::new(net).forward(positions.len(), size.rows(), size.cols(), &planes, &mut policy, &mut values);
    (planes, policy, values)
}

#[test]
fn avx2_kernels_match_burn_and_the_widest_kernels() {
    let device = Backend::Flex.device();
    let (_, bytes) = MODELS.iter().find(|(name, _)| *name == "konane").expect("the all-size network");
    let (net, _) = checkpoint::load_bytes(bytes, "konane", &device).unwrap();
    // F(2x2, 3x3) (6x6) and F(4x4, 3x3) (8x8, 13x20, partial tiles on 7x7).
    for (size, batch) in [("6x6", 9), ("8x8", 33), ("7x7", 5), ("13x20", 3)] {
        let size: Size = size.parse().unwrap();
        simd::limit(Simd::Auto);
        let (planes, wide_policy, wide_values) = native(&net, size, batch);
        simd::limit(Simd::Avx2);
        assert_ne!(simd::in_use(), "AVX-512", "the limit holds");
        let (_, policy, values) = native(&net, size, batch);
        let batch = values.len();
        let input =
            Tensor::<4>::from_data(TensorData::new(planes, [batch, INPUT_PLANES, size.rows(), size.cols()]), &device);
        let (burn_policy, burn_values) = net.forward(input);
        let burn_policy = burn_policy.into_data().try_to_vec::<f32>().unwrap();
        let burn_values = burn_values.into_data().try_to_vec::<f32>().unwrap();
        assert!(worst(&policy, &burn_policy) < 2e-4, "{size}: policy {}", worst(&policy, &burn_policy));
        assert!(worst(&values, &burn_values) < 2e-5, "{size}: value {}", worst(&values, &burn_values));
        assert!(worst(&policy, &wide_policy) < 2e-4, "{size}: policy against the widest kernels");
        assert!(worst(&values, &wide_values) < 2e-5, "{size}: value against the widest kernels");
        // Not a vacuous match: the outputs vary across positions.
        assert!(burn_policy.iter().any(|&x| (x - burn_policy[0]).abs() > 1e-2), "{size}");
    }

    // A native training step takes the same gradient either way (plain
    // SGD, whose step is linear in the gradient: Adam's first step is its
    // sign, which rounding flips where a gradient is near zero).
    let size: Size = "8x8".parse().unwrap();
    let batch: Vec<Sample> = cycled_positions(size, 40)
        .into_iter()
        .enumerate()
        .map(|(i, position)| {
            let moves = position.moves();
            let value = if i % 3 == 0 { 1.0 } else { -1.0 };
            Sample { position, policy: vec![(moves[i % moves.len()], 1.0)], value, reply: Vec::new() }
        })
        .collect();
    let step = |simd_limit| {
        simd::limit(simd_limit);
        let settings = LearnerConfig { optimizer: OptimizerKind::Sgd, ..LearnerConfig::default() };
        let mut learner = Learner::new(net.clone(), Backend::Native, settings);
        let losses = learner.step(&batch, 1e-2);
        let (_, policy, _) = native(&learner.inference_net(&device), size, 16);
        (losses.policy, losses.value, policy)
    };
    let (policy_wide, value_wide, after_wide) = step(Simd::Auto);
    let (policy, value, after) = step(Simd::Avx2);
    assert!((policy - policy_wide).abs() < 1e-4 && (value - value_wide).abs() < 1e-4, "losses");
    let (_, before, _) = native(&net, size, 16);
    let moved = worst(&after, &before);
    assert!(moved > 1e-3, "the step changed the outputs ({moved})");
    assert!(worst(&after, &after_wide) < moved * 1e-2, "outputs after the step {}", worst(&after, &after_wide));
    simd::limit(Simd::Auto);
}
