//! Probe: Winograd F(2x2, 3x3) convolution from burn tensor ops against
//! burn's own Conv2d, on one tower convolution. RAYON_NUM_THREADS=1.
use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2dConfig;
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use std::time::Instant;

fn kron(a: &[[f32; 4]], b: &[[f32; 4]], ar: usize, br: usize, cols_a: usize, cols_b: usize) -> Vec<f32> {
    let mut out = vec![0.0; ar * br * cols_a * cols_b];
    let cols = cols_a * cols_b;
    for i in 0..ar {
        for k in 0..br {
            for j in 0..cols_a {
                for l in 0..cols_b {
                    out[(i * br + k) * cols + j * cols_b + l] = a[i][j] * b[k][l];
                }
            }
        }
    }
    out
}

fn main() {
    let device = Device::flex();
    let (batch, c, h, w) = (32usize, 64usize, 8usize, 8usize);
    let conv = Conv2dConfig::new([c, c], [3, 3]).with_padding(PaddingConfig2d::Same).init(&device);
    let x = Tensor::<4>::random([batch, c, h, w], Distribution::Default, &device);
    let weight = conv.weight.val(); // [cout, cin, 3, 3]
    let bias = conv.bias.as_ref().unwrap().val();

    let bt = [[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0, -1.0, 1.0, 0.0], [0.0, 1.0, 0.0, -1.0]];
    let g = [[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.0], [0.5, -0.5, 0.5, 0.0], [0.0, 0.0, 1.0, 0.0]];
    let at = [[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, -1.0, -1.0], [0.0; 4], [0.0; 4]];
    let t16 = Tensor::<2>::from_data(TensorData::new(kron(&bt, &bt, 4, 4, 4, 4), [16, 16]), &device);
    let g16 = Tensor::<2>::from_data(TensorData::new(kron(&g, &g, 4, 4, 3, 3), [16, 9]), &device);
    let a16 = Tensor::<2>::from_data(TensorData::new(kron(&at, &at, 2, 2, 4, 4), [4, 16]), &device);
    // U = G g G^T: [16, cout, cin]
    let u = g16.matmul(weight.reshape([c * c, 9]).transpose()).reshape([16, c, c]);
    let (th, tw) = (h / 2, w / 2);
    let n = batch * th * tw;

    let wino = |x: Tensor<4>| -> Tensor<4> {
        let xp = x.pad((1, 1, 1, 1), burn::tensor::ops::PadMode::Constant(0.0));
        // [B, C, th, tw, 4, 4] view → [4, 4, C, B, th, tw]
        let d: Tensor<6> = xp.unfold::<5, _>(2, 4, 2).unfold(3, 4, 2);
        let d = d.permute([4, 5, 1, 0, 2, 3]).reshape([16, c * n]);
        let v = t16.clone().matmul(d).reshape([16, c, n]);
        let m = u.clone().matmul(v); // [16, cout, n]
        let y = a16.clone().matmul(m.reshape([16, c * n])); // [4, cout*n]
        let y: Tensor<6> = y.reshape([2, 2, c, batch, th, tw]);
        y.permute([3, 2, 4, 0, 5, 1]).reshape([batch, c, h, w]) + bias.clone().reshape([1, c, 1, 1])
    };

    {
        let mut t = [0f64; 7];
        for _ in 0..200 {
            let mut clock = Instant::now();
            let mut lap = |i: usize, t: &mut [f64; 7]| {
                t[i] += clock.elapsed().as_secs_f64();
                clock = Instant::now();
            };
            let xp = x.clone().pad((1, 1, 1, 1), burn::tensor::ops::PadMode::Constant(0.0));
            lap(0, &mut t);
            let d: Tensor<6> = xp.unfold::<5, _>(2, 4, 2).unfold(3, 4, 2);
            let d = d.permute([4, 5, 1, 0, 2, 3]).reshape([16, c * n]);
            lap(1, &mut t);
            let v = t16.clone().matmul(d).reshape([16, c, n]);
            lap(2, &mut t);
            let m = u.clone().matmul(v);
            lap(3, &mut t);
            let y = a16.clone().matmul(m.reshape([16, c * n]));
            lap(4, &mut t);
            let y: Tensor<6> = y.reshape([2, 2, c, batch, th, tw]);
            let y = y.permute([3, 2, 4, 0, 5, 1]).reshape([batch, c, h, w]);
            lap(5, &mut t);
            let _ = y + bias.clone().reshape([1, c, 1, 1]);
            lap(6, &mut t);
        }
        for (name, v) in ["pad", "tiles", "in-transform", "bmm", "out-transform", "untile", "bias"].iter().zip(t) {
            println!("{name}: {:.3} ms", v * 1e3 / 200.0);
        }
    }
    let direct = conv.forward(x.clone());
    let fast = wino(x.clone());
    let diff = (direct.clone() - fast.clone()).abs().max().into_scalar::<f32>();
    println!("max abs diff {diff}, direct max {}", direct.abs().max().into_scalar::<f32>());

    for (name, f) in [
        ("direct", &(|x: Tensor<4>| conv.forward(x)) as &dyn Fn(Tensor<4>) -> Tensor<4>),
        ("winograd", &wino as &dyn Fn(Tensor<4>) -> Tensor<4>),
    ] {
        for _ in 0..5 {
            let _ = f(x.clone()).into_data();
        }
        let start = Instant::now();
        let mut runs = 0;
        while start.elapsed().as_secs_f64() < 2.0 {
            let _ = f(x.clone()).into_data();
            runs += 1;
        }
        let ms = start.elapsed().as_secs_f64() * 1e3 / runs as f64;
        let flop = 2.0 * (batch * h * w * 9 * c * c) as f64;
        println!("{name}: {ms:.3} ms per conv = {:.1} effective GFLOP/s", flop / ms / 1e6);
    }
}
