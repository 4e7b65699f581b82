//! The CPU backends, chosen at run time.

use std::fmt;
use std::str::FromStr;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

/// Which burn CPU backend runs the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// burn-flex: pure Rust, the fastest CPU backend of burn 0.22 here
    /// (see the README's inference benchmark).
    #[default]
    Flex,
    /// burn-ndarray: the backend the project was first specified with;
    /// deprecated in burn 0.22 and several times slower.
    Ndarray,
}

impl Backend {
    /// The inference device.
    pub fn device(self) -> Device {
        match self {
            Backend::Flex => Device::flex(),
            #[allow(deprecated)] // chosen on purpose; see the variant's docs
            Backend::Ndarray => Device::ndarray(),
        }
    }

    /// The training device: the same backend with autodiff.
    pub fn autodiff_device(self) -> Device {
        self.device().autodiff()
    }
}

impl FromStr for Backend {
    type Err = String;

    fn from_str(text: &str) -> Result<Backend, String> {
        match text {
            "flex" => Ok(Backend::Flex),
            "ndarray" => Ok(Backend::Ndarray),
            other => Err(format!("unknown backend '{other}': flex or ndarray")),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Flex => "flex",
            Backend::Ndarray => "ndarray",
        })
    }
}
