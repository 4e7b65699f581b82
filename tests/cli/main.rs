//! End-to-end tests: the real `konane` binary, one module per command (and
//! one for bad input of every kind), sharing the helpers of [`common`]. One
//! test binary rather than one per file, so two cores link it once.

mod common;

mod accuracy;
mod bad_input;
mod bench_net;
mod cluster;
mod ktp;
mod play;
mod serve;
mod solve;
mod train;
