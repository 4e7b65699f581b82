//! `konane solve SIZE|POS`: `value: W|L` and `winning: MOVES`.
//!
//! With `--save DIR` the solve keeps a journal: every result that took at
//! least a million nodes is appended to `DIR/journal.bin` as it is found
//! (a checksummed record each), beside `DIR/solve.json` (what is being
//! solved, and how). `konane solve --resume DIR` puts the journal's results
//! back into the table and solves again: after Ctrl-C, a kill or a crash
//! only the work since the last expensive result is redone. The finished
//! result is written to `DIR/result.txt`, and its proof to `DIR/proof`.
//!
//! `--replies` adds each move's value and the opponent's winning answers
//! to it (from a start: every opening). `--proof FILE` writes a proof of
//! all that (`konane_rules::proof`), and `konane solve --verify FILE|DIR`
//! checks it with the naive rules and prints the same lines.
//!
//! `--dfpn` searches by proof numbers (`konane_rules::dfpn`) instead, for
//! the value, the replies and the proof. Its saved solves keep no journal
//! but a checkpoint of the table's expensive entries, unsettled ones
//! included, rewritten atomically to `DIR/table.bin` every ten minutes.
//! `--warm-from DIR` starts a new df-pn solve from another saved solve's
//! table: the keys are positions, whichever root they were searched from.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use konane_mcts::{Batch, Evaluator};
use konane_nn::player::load_model;
use konane_nn::{Backend, Net, NetEvaluator, shipped};
use konane_rules::dfpn::{DfpnSolver, TableEntry};
use konane_rules::regions::{RegionLimits, RegionStats};
use konane_rules::solver::{JournalEntry, MoveOrder, Progress, Unsolved};
use konane_rules::{Move, Position, Size, Solution, Solver, proof};
use serde::{Deserialize, Serialize};

use super::{human, parse_board};

/// Arguments of `konane solve`.
#[derive(clap::Args)]
pub struct Args {
    /// Board size (`6x6`, from the start) or a quoted position string.
    #[arg(required_unless_present_any = ["resume", "verify"])]
    board: Option<String>,
    /// Transposition table size: 2^BITS buckets of 32 bytes (10 to 29: 32 KiB to 16 GiB).
    #[arg(long, default_value_t = 22, value_parser = clap::value_parser!(u32).range(*TABLE_BITS.start() as i64..=*TABLE_BITS.end() as i64))]
    table_bits: u32,
    /// Transposition table size in GiB (rounded down to a power of two of
    /// buckets; 0.001 to 16), instead of --table-bits.
    #[arg(long, conflicts_with = "table_bits", value_parser = parse_gib)]
    table_gib: Option<f64>,
    /// Keep symmetric images of a position apart in the table (slower; for
    /// measuring what the folding saves).
    #[arg(long)]
    no_symmetry: bool,
    /// Keep a journal of the solve in this new directory, to resume it.
    #[arg(long, conflicts_with = "resume")]
    save: Option<PathBuf>,
    /// Resume the solve saved in this directory (its board and table size).
    #[arg(long, conflicts_with_all = ["board", "no_symmetry"])]
    resume: Option<PathBuf>,
    /// Also give each move's value and the opponent's winning replies to it
    /// (from a start: every opening and every winning answer).
    #[arg(long)]
    replies: bool,
    /// Write a proof of the result to this new file, for `--verify` (with
    /// `--save DIR` it goes to `DIR/proof`).
    #[arg(long, conflicts_with = "verify")]
    proof: Option<PathBuf>,
    /// No proof in the `--save` directory (for boards whose proof would be
    /// too big to be worth keeping).
    #[arg(long, conflicts_with = "proof")]
    no_proof: bool,
    /// Check a proof (a file, or a `--save` directory's `proof`) with the
    /// naive rules instead of solving, and print what it shows.
    #[arg(long, conflicts_with_all = ["board", "resume", "save", "no_symmetry", "replies", "no_proof", "threads"])]
    verify: Option<PathBuf>,
    /// Threads sharing the table: each takes distinct root moves, and
    /// those left without one split the trees still being searched
    /// (default: one per core; 1 gives the same node count every run).
    #[arg(long, value_parser = super::parse_threads)]
    threads: Option<usize>,
    /// The network whose policy orders the moves near the root (a network
    /// file or a model directory such as `checkpoints/6x6`); default: the
    /// shipped all-size network, on every board.
    #[arg(long, value_name = "MODEL", conflicts_with = "verify")]
    policy: Option<String>,
    /// Order every move by fewest replies, without a network.
    #[arg(long, conflicts_with_all = ["policy", "policy_plies"])]
    no_policy: bool,
    /// Plies below the root's moves (1 to 40) whose moves the policy orders;
    /// default: a third of the board's cells. More plies search fewer nodes
    /// but call the network more often: 6x6 took 9.2 M nodes by fewest
    /// replies, 3.1 M with 12 plies and 1.6 M with 24, where the calls cost
    /// 40 times the search.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=40))]
    policy_plies: Option<u32>,
    /// Search by depth-first proof numbers (df-pn) instead of alpha-beta:
    /// on 7x6 it searched 10 times fewer nodes than alpha-beta by fewest
    /// replies, on 4x10 16,000 times fewer, and its proofs are 6-13 times
    /// smaller; where black wins it is slower. Its threads share the table
    /// as alpha-beta's do; with --save DIR a checkpoint every ten minutes
    /// that --resume DIR goes on from (--resume --dfpn of an alpha-beta
    /// solve starts from its journal); no network unless --policy or
    /// --policy-plies names one (4 plies: 9-25% fewer nodes).
    #[arg(long, conflicts_with_all = ["no_symmetry", "verify"])]
    dfpn: bool,
    /// With --dfpn: start the table from another saved solve of the same
    /// board size (its table checkpoint and journal), e.g. the start of
    /// 7x7 from the solve of its corner opening, whose settled positions
    /// are most of the start's work.
    #[arg(long, value_name = "DIR", requires = "dfpn", conflicts_with = "resume")]
    warm_from: Option<PathBuf>,
    /// With df-pn: stop the search for the value after N nodes (1 or more).
    /// A saved solve keeps its table for --resume, so a long solve can run
    /// in pieces.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_nodes: Option<u64>,
    /// Seconds between a saved df-pn solve's checkpoints (0 to 86400).
    #[arg(long, default_value_t = 600, hide = true, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    checkpoint_secs: u64,
    /// With --dfpn and a policy (--policy or --policy-plies): a move's cost
    /// per unit of log-prior below the likeliest move's (0.01 to 1000;
    /// default 16, as measured in docs/experiments/2026-12-04-proof-number-search.md).
    #[arg(long, hide = true, requires = "dfpn", value_parser = parse_cost_scale)]
    policy_cost: Option<f32>,
    /// Decide the positions that fall apart into groups of stones that can
    /// never meet by the groups' combinatorial game values, each group's
    /// game walked once, instead of searching every interleaving of their
    /// moves (`konane_rules::regions`). With --dfpn on 7x6 it searched 30%
    /// fewer nodes in 25% less time; on the 7x7 centre 7% more nodes in
    /// 2% more time, and alpha-beta on 6x6 ran about 20% slower.
    #[arg(long, conflicts_with = "verify")]
    regions: bool,
    /// With --regions: the stones a group may have (1 to 400; default 4:
    /// 7x6 by df-pn took 16.5 s with 4, 17.3 s with 5 and 19.6 s with 6).
    #[arg(long, value_name = "N", requires = "regions", hide = true, default_value_t = RegionLimits::default().stones,
          value_parser = clap::value_parser!(u32).range(1..=400))]
    region_stones: u32,
    /// With --regions: the positions one group's walk may visit before the
    /// group counts as too big to pay (1 to 10,000,000).
    #[arg(long, value_name = "N", requires = "regions", hide = true, default_value_t = RegionLimits::default().walk,
          value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    region_walk: u32,
    /// Results that took at least this many nodes go to the journal.
    #[arg(long, default_value_t = 1 << 20, hide = true, value_parser = clap::value_parser!(u64).range(1..))]
    journal_min_work: u64,
}

fn parse_cost_scale(text: &str) -> Result<f32, String> {
    let scale: f32 = text.trim().parse().map_err(|e| format!("{e}"))?;
    if !(scale.is_finite() && (0.01..=1000.0).contains(&scale)) {
        return Err(format!("{text}: a scale from 0.01 to 1000"));
    }
    Ok(scale)
}

fn parse_gib(text: &str) -> Result<f64, String> {
    let gib: f64 = text.trim().parse().map_err(|e| format!("{e}"))?;
    if !(gib.is_finite() && (0.001..=16.0).contains(&gib)) {
        return Err(format!("{text}: a size in GiB from 0.001 to 16"));
    }
    Ok(gib)
}

/// `DIR/solve.json`: what a saved solve solves, and how.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SolveFile {
    version: u32,
    /// The position, in the notation's position string.
    position: String,
    table_bits: u32,
    symmetry: bool,
    /// Solved by proof numbers (`--dfpn`): resumed from `table.bin`.
    #[serde(default)]
    dfpn: bool,
}

const SOLVE_FILE: &str = "solve.json";
const JOURNAL_FILE: &str = "journal.bin";
const RESULT_FILE: &str = "result.txt";
const PROOF_FILE: &str = "proof";
const TABLE_FILE: &str = "table.bin";
const SOLVE_VERSION: u32 = 1;
/// The table sizes a solve may have, in the alpha-beta solver's 32-byte
/// buckets (`--table-bits`, and what `solve.json` records).
const TABLE_BITS: std::ops::RangeInclusive<u32> = 10..=Solver::MAX_TABLE_BITS;
/// `solve.json` is a few lines; anything longer is not one.
const MAX_SOLVE_FILE_BYTES: u64 = 64 << 10;
/// A proof file: 12 MB for 7x7's 21 M positions, so this holds proofs
/// about a hundred times larger.
const MAX_PROOF_BYTES: u64 = 1 << 30;
/// A journal keeps a solve's expensive results, 25 bytes each: the largest
/// so far is 8x6's, 249 KB. Its length grows with the solve's work, not its
/// table, so the bound is fixed: 43 M results.
const MAX_JOURNAL_BYTES: u64 = 1 << 30;
const JOURNAL_MAGIC: &[u8; 16] = b"konane-journal\0\x01";
/// hash, check, value, work, CRC-32 of those.
const RECORD_BYTES: usize = 8 + 4 + 1 + 8 + 4;

fn record(entry: &JournalEntry) -> [u8; RECORD_BYTES] {
    let mut out = [0u8; RECORD_BYTES];
    out[..8].copy_from_slice(&entry.hash.to_le_bytes());
    out[8..12].copy_from_slice(&entry.check.to_le_bytes());
    out[12] = u8::from(entry.win);
    out[13..21].copy_from_slice(&entry.work.to_le_bytes());
    let crc = crc32fast::hash(&out[..21]);
    out[21..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The journal's intact records, and the length of the file they fill (a
/// torn or damaged tail is cut off there on resume).
fn read_journal(path: &Path) -> anyhow::Result<(Vec<JournalEntry>, u64)> {
    let bytes = konane_files::read_bounded(path, MAX_JOURNAL_BYTES, "solve journal")?;
    anyhow::ensure!(bytes.starts_with(JOURNAL_MAGIC), "{}: not a konane solve journal", path.display());
    let mut entries = Vec::new();
    let mut at = JOURNAL_MAGIC.len();
    while let Some(chunk) = bytes.get(at..at + RECORD_BYTES) {
        if crc32fast::hash(&chunk[..21]).to_le_bytes() != chunk[21..] || chunk[12] > 1 {
            tracing::warn!(offset = at, "{}: a damaged record; the journal is cut there", path.display());
            break;
        }
        let u64_at = |i: usize| u64::from_le_bytes(chunk[i..i + 8].try_into().expect("8 bytes"));
        entries.push(JournalEntry {
            hash: u64_at(0),
            check: u32::from_le_bytes(chunk[8..12].try_into().expect("4 bytes")),
            win: chunk[12] == 1,
            work: u64_at(13),
        });
        at += RECORD_BYTES;
    }
    Ok((entries, at as u64))
}

const TABLE_MAGIC: &[u8; 16] = b"konane-dfpn-tab\x01";
/// A checkpoint's bytes besides its entries: magic, entry count, CRC-32.
const CHECKPOINT_OVERHEAD: usize = TABLE_MAGIC.len() + 8 + 4;
/// hash, check, work, phi, delta.
const ENTRY_BYTES: usize = 8 + 4 + 4 + 8 + 8;
/// A df-pn checkpoint leaves out the entries whose last search took fewer
/// nodes: they are most of the table and quick to find again.
const CHECKPOINT_MIN_WORK: u32 = 64;
/// How often the df-pn search offers its table for a checkpoint (an offer
/// that is not due costs a clock read).
const CHECKPOINT_OFFER_NODES: u64 = 1 << 16;

/// A df-pn checkpoint: the magic, the number of entries, the entries, and
/// a CRC-32 of all that.
fn checkpoint_bytes(entries: impl Iterator<Item = TableEntry>) -> Vec<u8> {
    let mut out = TABLE_MAGIC.to_vec();
    out.extend([0; 8]);
    let mut count = 0u64;
    for entry in entries {
        out.extend(entry.hash.to_le_bytes());
        out.extend(entry.check.to_le_bytes());
        out.extend(entry.work.to_le_bytes());
        out.extend(entry.phi.to_le_bytes());
        out.extend(entry.delta.to_le_bytes());
        count += 1;
    }
    out[16..24].copy_from_slice(&count.to_le_bytes());
    out.extend(crc32fast::hash(&out).to_le_bytes());
    out
}

/// Writes the expensive entries of a df-pn table to `path`, atomically.
fn write_checkpoint(path: &Path, entries: &mut dyn Iterator<Item = TableEntry>) -> anyhow::Result<()> {
    let bytes = checkpoint_bytes(entries.filter(|e| e.work >= CHECKPOINT_MIN_WORK));
    konane_files::write_atomically(path, &bytes)
        .with_context(|| format!("writing the checkpoint {}", path.display()))?;
    tracing::info!(bytes = bytes.len(), "checkpoint written to {}", path.display());
    Ok(())
}

/// The entries of the df-pn checkpoint at `path`, if it is whole; it
/// comes from a table of `2^table_bits` entries, and holds at most that
/// many.
fn read_checkpoint(path: &Path, table_bits: u32) -> anyhow::Result<Vec<TableEntry>> {
    let max = CHECKPOINT_OVERHEAD as u64 + ((ENTRY_BYTES as u64) << table_bits);
    let bytes = konane_files::read_bounded(path, max, "df-pn checkpoint")?;
    anyhow::ensure!(bytes.starts_with(TABLE_MAGIC), "{}: not a konane df-pn checkpoint", path.display());
    let damaged = || format!("{}: a damaged checkpoint (delete it to start the solve over)", path.display());
    let body = bytes.len().checked_sub(CHECKPOINT_OVERHEAD).with_context(damaged)?;
    let count = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    anyhow::ensure!(body as u64 == count.saturating_mul(ENTRY_BYTES as u64), damaged());
    let (content, crc) = bytes.split_at(bytes.len() - 4);
    anyhow::ensure!(crc32fast::hash(content).to_le_bytes() == crc, damaged());
    let entries = content[24..]
        .chunks_exact(ENTRY_BYTES)
        .map(|chunk| {
            let u64_at = |i: usize| u64::from_le_bytes(chunk[i..i + 8].try_into().expect("8 bytes"));
            let u32_at = |i: usize| u32::from_le_bytes(chunk[i..i + 4].try_into().expect("4 bytes"));
            TableEntry { hash: u64_at(0), check: u32_at(8), work: u32_at(12), phi: u64_at(16), delta: u64_at(24) }
        })
        .collect();
    Ok(entries)
}

/// How much of the solve is resolved and a rough time left, as the
/// progress line says it: the time so far scaled by the unresolved share.
fn remaining(resolved: f64, seconds: f64) -> String {
    let resolved = resolved.clamp(0.0, 1.0);
    if resolved == 0.0 {
        return "resolved 0.0%, time left not known yet".into();
    }
    let left = match seconds * (1.0 - resolved) / resolved {
        s if s < 120.0 => format!("{s:.0}s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    };
    format!("resolved {:.1}%, roughly {left} left", 100.0 * resolved)
}

/// Solves exactly and prints the value for the side to move, every winning
/// move, and the search statistics; a solve that runs for more than a few
/// seconds reports its progress on standard error.
pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(path) = &args.verify {
        return verify(path);
    }
    let saved = args.resume.as_deref().map(read_saved).transpose().context("--resume")?;
    if args.dfpn || saved.as_ref().is_some_and(|(_, saved)| saved.dfpn) {
        return solve_by_proof_numbers(&args, saved);
    }
    anyhow::ensure!(args.max_nodes.is_none(), "--max-nodes: only a proof-number solve (--dfpn) stops on a budget");
    let (position, bits, symmetry, dir) = if let Some((position, saved)) = saved {
        (position, saved.table_bits, saved.symmetry, args.resume.clone())
    } else {
        let position = parse_board(args.board.as_deref().expect("clap requires a board without --resume"))?;
        (position, table_bits(&args)?, !args.no_symmetry, args.save.clone())
    };
    let size = position.size();
    let start = Instant::now();
    let mut solver = Solver::try_new(bits).context("the transposition table")?;
    solver.set_symmetry(symmetry);
    solver.set_regions(region_limits(&args));

    if let Some(dir) = &dir {
        let journal_path = dir.join(JOURNAL_FILE);
        let mut journal = if args.resume.is_some() {
            let (entries, intact) = read_journal(&journal_path)?;
            for entry in &entries {
                solver.pin(*entry);
            }
            eprintln!("resuming {size}: {} results from {}", entries.len(), journal_path.display());
            // Appends go after the intact records, the torn tail cut off.
            let file = OpenOptions::new()
                .append(true)
                .open(&journal_path)
                .with_context(|| format!("{}", journal_path.display()))?;
            file.set_len(intact).with_context(|| format!("{}", journal_path.display()))?;
            file
        } else {
            create_save_dir(dir, &position, bits, symmetry, false)?;
            let mut file = File::create(&journal_path).with_context(|| format!("{}", journal_path.display()))?;
            file.write_all(JOURNAL_MAGIC).and_then(|()| file.sync_all()).context("writing the journal")?;
            file
        };
        solver.set_journal(args.journal_min_work, move |entry| match journal.write_all(&record(&entry)) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!("writing the solve journal: {e}");
                false
            }
        });
    }

    let policy = if args.no_policy { None } else { Some(order_by_policy(&mut solver, &args, size)?) };
    let threads = args.threads.unwrap_or_else(super::cores);
    let solution = while_reporting_progress(&position, start, &solver.progress(), |on_move| {
        solver.solve_each_parallel(&position, threads, on_move)
    });
    let solution = solution.map_err(|_| anyhow::anyhow!("the solve stopped: its journal could not be written"))?;
    let mut report =
        solution_text(&position, &solution, start, solver.table_bytes(), if symmetry { "" } else { ", symmetry off" });
    report.push_str(&regions_text(solver.region_stats()));
    if let Some((calls, plies)) = &policy {
        report.push_str(&format!(
            "policy: {} network calls over the first {plies} plies\n",
            calls.load(Ordering::Relaxed)
        ));
    }
    if args.replies {
        let values = move_values(&position, start, |child| {
            solver.solve_each_parallel(child, threads, |_, _| {}).context("the replies")
        })?;
        report.push_str(&replies_text(&position, &values));
    }
    finish(&args, dir.as_deref(), &position, &solution, report, |shown| {
        proof::prove_counting(&mut solver, &position, proof::MAX_DEPTH, shown)
    })
}

/// Makes the new directory of `--save DIR` and writes what it solves, and
/// how, to `DIR/solve.json`.
fn create_save_dir(dir: &Path, position: &Position, table_bits: u32, symmetry: bool, dfpn: bool) -> anyhow::Result<()> {
    anyhow::ensure!(!dir.exists(), "--save: {} already exists (resume it with --resume)", dir.display());
    std::fs::create_dir_all(dir).with_context(|| format!("--save: {}", dir.display()))?;
    let saved = SolveFile { version: SOLVE_VERSION, position: position.to_string(), table_bits, symmetry, dfpn };
    let path = dir.join(SOLVE_FILE);
    konane_files::write_atomically(&path, serde_json::to_string_pretty(&saved)?.as_bytes())
        .with_context(|| format!("{}", path.display()))
}

/// The position and settings of the solve saved in `dir`.
fn read_saved(dir: &Path) -> anyhow::Result<(Position, SolveFile)> {
    let path = dir.join(SOLVE_FILE);
    let bytes = konane_files::read_bounded(&path, MAX_SOLVE_FILE_BYTES, "solve.json")?;
    let saved: SolveFile = serde_json::from_slice(&bytes).with_context(|| format!("{}", path.display()))?;
    anyhow::ensure!(
        saved.version == SOLVE_VERSION,
        "{}: version {} is not {SOLVE_VERSION}",
        path.display(),
        saved.version
    );
    anyhow::ensure!(
        TABLE_BITS.contains(&saved.table_bits),
        "{}: table_bits {} is not in {}..={}",
        path.display(),
        saved.table_bits,
        TABLE_BITS.start(),
        TABLE_BITS.end()
    );
    let position = parse_board(&saved.position).with_context(|| format!("{}: position", path.display()))?;
    Ok((position, saved))
}

/// The table size `--table-bits` or `--table-gib` asks for, in the
/// alpha-beta solver's 32-byte buckets.
fn table_bits(args: &Args) -> anyhow::Result<u32> {
    Ok(match args.table_gib {
        Some(gib) => Solver::table_bits_for((gib * (1u64 << 30) as f64) as u64).context("--table-gib")?.max(10),
        None => args.table_bits,
    })
}

/// `--dfpn`: the value and winning moves by proof-number search, in the
/// same report as the alpha-beta solve's.
///
/// With `--save DIR` the table's expensive entries are checkpointed to
/// `DIR/table.bin`; `--resume DIR` restores the checkpoint, and pins the
/// results of an alpha-beta solve's journal if the directory has one (the
/// same symmetry-folded keys).
fn solve_by_proof_numbers(args: &Args, saved: Option<(Position, SolveFile)>) -> anyhow::Result<()> {
    let (position, bits, dir) = if let Some((position, saved)) = saved {
        let dir = args.resume.clone().expect("a saved solve is read from --resume");
        anyhow::ensure!(saved.symmetry, "--dfpn: {} was solved with --no-symmetry", dir.display());
        (position, saved.table_bits, Some(dir))
    } else {
        (
            parse_board(args.board.as_deref().expect("clap requires a board without --resume"))?,
            table_bits(args)?,
            args.save.clone(),
        )
    };
    if let Some(path) = &args.proof {
        anyhow::ensure!(!path.exists(), "--proof: {} already exists", path.display());
    }
    if let Some(dir) = &args.save {
        create_save_dir(dir, &position, bits, true, true)?;
    }
    let start = Instant::now();
    // Its sets hold two entries in 64 bytes: half as many sets as the
    // alpha-beta table's buckets is the same memory.
    let mut solver = DfpnSolver::try_new(bits - 1).context("the transposition table")?;
    solver.set_regions(region_limits(args));
    // Where the table starts from, with that solve's table size (which
    // bounds its checkpoint): the solve resumed, else the one warmed from.
    let mut warm = None;
    if let Some(dir) = &args.warm_from {
        let (theirs, saved) = read_saved(dir).context("--warm-from")?;
        anyhow::ensure!(
            theirs.size() == position.size(),
            "--warm-from: {} solved a {} board, this is {}",
            dir.display(),
            theirs.size(),
            position.size()
        );
        anyhow::ensure!(
            dir.join(TABLE_FILE).exists() || dir.join(JOURNAL_FILE).exists(),
            "--warm-from: {} holds no {TABLE_FILE} or {JOURNAL_FILE} to start from",
            dir.display()
        );
        warm = Some((dir.as_path(), saved.table_bits));
    }
    if let Some((dir, table_bits)) = args.resume.as_deref().map(|dir| (dir, bits)).or(warm) {
        restore_saved_table(&mut solver, &position, dir, table_bits)?;
    }
    if let Some(dir) = &dir {
        let path = dir.join(TABLE_FILE);
        let every = Duration::from_secs(args.checkpoint_secs);
        let mut last = Instant::now();
        solver.set_checkpoints(CHECKPOINT_OFFER_NODES, move |entries| {
            if last.elapsed() < every {
                return true;
            }
            match write_checkpoint(&path, entries) {
                Ok(()) => {
                    last = Instant::now();
                    true
                }
                Err(e) => {
                    tracing::error!("{e:#}");
                    false
                }
            }
        });
    }
    // Without a network unless one is named: see `--dfpn`.
    let policy = if args.policy.is_some() || args.policy_plies.is_some() {
        let (order, calls, plies) = policy_order(args, position.size())?;
        solver.set_move_order(plies as usize, order, args.policy_cost.unwrap_or(16.0));
        Some((calls, plies))
    } else {
        None
    };
    let max_nodes = args.max_nodes.unwrap_or(u64::MAX);
    let threads = args.threads.unwrap_or_else(super::cores);
    let searched = while_reporting_progress(&position, start, &solver.progress(), |on_move| {
        solver.solve_each_parallel(&position, threads, max_nodes, on_move)
    });
    let stopped = |_: Unsolved| anyhow::anyhow!("the solve stopped: its checkpoint could not be written");
    if let Err(unsolved) = searched
        && solver.checkpoint_failed()
    {
        return Err(stopped(unsolved));
    }
    // The table as the search left it, settled or not: for --resume, and
    // for --warm-from a solve of a bigger question.
    if let Some(dir) = &dir {
        write_checkpoint(&dir.join(TABLE_FILE), &mut solver.entries())?;
    }
    let solution = searched.map_err(|_| {
        let resume = match &dir {
            Some(dir) => format!("`konane solve --resume {}` goes on from its table", dir.display()),
            None => "with --save DIR its table would have been kept".into(),
        };
        anyhow::anyhow!("no result within --max-nodes {max_nodes}: {resume}")
    })?;
    let mut report = solution_text(&position, &solution, start, solver.table_bytes(), ", df-pn");
    report.push_str(&regions_text(solver.region_stats()));
    if let Some((calls, plies)) = &policy {
        report.push_str(&format!(
            "policy: {} network calls over the first {plies} plies\n",
            calls.load(Ordering::Relaxed)
        ));
    }
    if args.replies {
        let values = move_values(&position, start, |child| {
            solver.solve_each_parallel(child, threads, u64::MAX, |_, _| {}).map_err(stopped)
        })?;
        report.push_str(&replies_text(&position, &values));
    }
    finish(args, dir.as_deref(), &position, &solution, report, |shown| {
        proof::prove_counting(&mut solver, &position, proof::MAX_DEPTH, shown)
    })
}

/// Puts a saved solve's table checkpoint and the results of its journal
/// (an alpha-beta solve's, keyed the same way) into `solver`'s table;
/// `table_bits` is that solve's table size, which bounds its checkpoint.
fn restore_saved_table(
    solver: &mut DfpnSolver,
    position: &Position,
    dir: &Path,
    table_bits: u32,
) -> anyhow::Result<()> {
    let journal = dir.join(JOURNAL_FILE);
    if journal.exists() {
        let (entries, _) = read_journal(&journal)?;
        for entry in &entries {
            solver.pin(*entry);
        }
        eprintln!("starting {} from {} results of {}", position.size(), entries.len(), journal.display());
    }
    let table = dir.join(TABLE_FILE);
    if table.exists() {
        let entries = read_checkpoint(&table, table_bits)?;
        for &entry in &entries {
            solver.restore(entry);
        }
        eprintln!("restored {} positions from {}", entries.len(), table.display());
    }
    Ok(())
}

/// Saves and prints the report, then writes the proof (to `--proof FILE`,
/// else into the solve's directory unless `--no-proof`) and tells where.
fn finish(
    args: &Args,
    dir: Option<&Path>,
    position: &Position,
    solution: &Solution,
    mut report: String,
    prove: impl FnOnce(&AtomicU64) -> Result<(proof::Proof, proof::Report), proof::ProveError>,
) -> anyhow::Result<()> {
    // The result is out before the proof, which can take longer than the solve.
    save_result(dir, position, &report)?;
    let mut stdout = super::stdout();
    stdout.write_all(report.as_bytes())?;
    stdout.flush()?;
    let proof_path = if args.no_proof { None } else { args.proof.clone().or_else(|| dir.map(|d| d.join(PROOF_FILE))) };
    if let Some(path) = &proof_path {
        // A resumed solve writes its directory's proof again.
        anyhow::ensure!(args.proof.is_none() || !path.exists(), "--proof: {} already exists", path.display());
        let proving = Instant::now();
        let (proof, values) = while_reporting_proof(proving, prove)?;
        anyhow::ensure!(values.win == solution.win, "the proof's value differs from the solve's (a false table hit?)");
        let bytes = proof.to_bytes();
        konane_files::write_atomically(path, &bytes).with_context(|| format!("{}", path.display()))?;
        let line = format!(
            "proof: {} ({} positions, {} bytes, {:.1}s)\n",
            path.display(),
            values.positions,
            bytes.len(),
            proving.elapsed().as_secs_f64()
        );
        report.push_str(&line);
        save_result(dir, position, &report)?;
        stdout.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Runs `prove`, printing every 10 s how many positions it has shown: a
/// proof can take longer than the solve, with nothing else to show for it.
fn while_reporting_proof<T: Send>(start: Instant, prove: impl FnOnce(&AtomicU64) -> T) -> T {
    let shown = AtomicU64::new(0);
    every_ten_seconds_while(
        || {
            let seconds = start.elapsed().as_secs_f64();
            let count = shown.load(Ordering::Relaxed) as f64;
            eprintln!("proving: {} positions shown in {seconds:.0}s ({}/s)", human(count), human(count / seconds));
        },
        || prove(&shown),
    )
}

/// Runs `work`, calling `report` from another thread every 10 s until it
/// ends.
fn every_ten_seconds_while<T: Send>(report: impl Fn() + Sync, work: impl FnOnce() -> T) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut last = Instant::now();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if last.elapsed() >= Duration::from_secs(10) {
                    last = Instant::now();
                    report();
                }
            }
        });
        let result = work();
        done.store(true, Ordering::Relaxed);
        result
    })
}

/// The moves of `position` in the order reports and proofs list them.
fn sorted_moves(position: &Position) -> Vec<Move> {
    let mut moves: Vec<Move> = position.moves().into_iter().collect();
    moves.sort_unstable();
    moves
}

/// Runs `solve`, giving it what to call with each root move's value, and
/// prints a progress line every 10 s while it runs (and each root move's
/// value once the solve has taken 10 s).
fn while_reporting_progress<T: Send>(
    position: &Position,
    start: Instant,
    progress: &Progress,
    solve: impl FnOnce(&(dyn Fn(Move, bool) + Sync)) -> T,
) -> T {
    let size = position.size();
    let roots = position.moves().len();
    let solved_roots = AtomicUsize::new(0);
    every_ten_seconds_while(
        || {
            let nodes = progress.nodes();
            let seconds = start.elapsed().as_secs_f64();
            eprintln!(
                "solving {size}: {} nodes in {seconds:.0}s ({} nodes/s), root moves done {}/{roots}, {}",
                human(nodes as f64),
                human(nodes as f64 / seconds),
                solved_roots.load(Ordering::Relaxed),
                remaining(progress.resolved(), seconds),
            );
        },
        || {
            solve(&|mv, wins| {
                let done = solved_roots.fetch_add(1, Ordering::Relaxed) + 1;
                // A long solve tells each root move's value as soon as it is known.
                if start.elapsed() >= Duration::from_secs(10) {
                    let value = if wins { "wins" } else { "loses" };
                    eprintln!("solved {} ({done}/{roots}): {value}", mv.to_text(size));
                }
            })
        },
    )
}

/// The limits of `--regions`, if given.
fn region_limits(args: &Args) -> Option<RegionLimits> {
    args.regions.then(|| RegionLimits { stones: args.region_stones, walk: args.region_walk, ..RegionLimits::default() })
}

/// The report's line on `--regions` (empty without): how many positions
/// the first thread asked about, how many split into groups each small
/// enough to walk, and how many were decided.
fn regions_text(stats: Option<RegionStats>) -> String {
    stats.map_or_else(String::new, |stats| {
        format!(
            "regions: {} positions decided of {} in two or more small groups ({} asked, {} group positions walked; the first thread)\n",
            stats.decided, stats.split, stats.asked, stats.walked
        )
    })
}

/// The report's first lines: the value, the winning moves, and what the
/// search cost (`note` ends the last line).
fn solution_text(position: &Position, solution: &Solution, start: Instant, table_bytes: u64, note: &str) -> String {
    let size = position.size();
    let seconds = start.elapsed().as_secs_f64();
    let winning: Vec<String> = solution.winning_moves.iter().map(|m| m.to_text(size)).collect();
    format!(
        "value: {}\nwinning: {}\nside: {}  nodes: {}  time: {seconds:.3}s  ({} nodes/s)  table: {} MiB{note}\n",
        if solution.win { "W" } else { "L" },
        winning.join(" "),
        position.side_to_move(),
        solution.nodes,
        human(solution.nodes as f64 / seconds.max(1e-9)),
        table_bytes >> 20,
    )
}

/// Gives `solver` the move order of `--policy` (the shipped all-size
/// network by default) for `--policy-plies`: the count of its network
/// calls, and the plies.
fn order_by_policy(solver: &mut Solver, args: &Args, size: Size) -> anyhow::Result<(Arc<AtomicU64>, u32)> {
    let (order, calls, plies) = policy_order(args, size)?;
    solver.set_move_order(plies as usize, order);
    Ok((calls, plies))
}

/// The move order of `--policy` (the shipped all-size network by default)
/// for `--policy-plies`, the count of its network calls, and the plies.
fn policy_order(args: &Args, size: Size) -> anyhow::Result<(Box<dyn MoveOrder>, Arc<AtomicU64>, u32)> {
    let device = Backend::Native.device();
    let (net, file) = match &args.policy {
        Some(model) => {
            let (net, _, file) = load_model(model, &device, 1).with_context(|| format!("--policy {model}"))?;
            (net, file)
        }
        None => {
            let shipped = shipped::load_widest(&device).context("the shipped network")?;
            let label = shipped.label();
            (shipped.net, label)
        }
    };
    let plies = args.policy_plies.unwrap_or((size.cells() / 3).clamp(1, 40) as u32);
    let calls = Arc::default();
    let order = PolicyOrder::new(net, Arc::clone(&calls));
    eprintln!("ordering the moves of the first {plies} plies by the policy of {file}");
    Ok((Box::new(order), calls, plies))
}

/// The solver's [`MoveOrder`] from a network's policy: the moves with the
/// highest priors first. A network that fails leaves the solver's order.
struct PolicyOrder {
    /// The weights, for the other threads' copies.
    net: Net,
    evaluator: NetEvaluator,
    batch: Batch,
    /// Network calls made by every copy, for the report.
    calls: Arc<AtomicU64>,
}

impl PolicyOrder {
    fn new(net: Net, calls: Arc<AtomicU64>) -> PolicyOrder {
        PolicyOrder { evaluator: NetEvaluator::native(&net), net, batch: Batch::new(), calls }
    }
}

impl MoveOrder for PolicyOrder {
    fn score(&mut self, position: &Position, moves: &[Move], scores: &mut Vec<f32>) -> bool {
        self.batch.clear();
        self.batch.push(*position);
        if self.evaluator.evaluate(&mut self.batch).is_err() {
            return false;
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        // Priors and moves both follow `legal_moves`' order.
        let (_, priors) = self.batch.output(0);
        scores.extend_from_slice(priors);
        priors.len() == moves.len()
    }

    fn fork(&self) -> Box<dyn MoveOrder> {
        Box::new(PolicyOrder::new(self.net.clone(), Arc::clone(&self.calls)))
    }
}

/// `DIR/result.txt`, written atomically: the position and the report.
fn save_result(dir: Option<&Path>, position: &Position, report: &str) -> anyhow::Result<()> {
    if let Some(dir) = dir {
        let path = dir.join(RESULT_FILE);
        let text = format!("{position}\n{report}");
        konane_files::write_atomically(&path, text.as_bytes()).with_context(|| format!("{}", path.display()))?;
    }
    Ok(())
}

/// Each move of `position` (sorted) with its value and the opponent's
/// winning replies, from the solver (its table answers most of it after
/// the solve).
/// `solve` gives the value and winning moves of each position after a
/// move; once the solve has taken 10 s (since `start`), each move's line is
/// told as it is done.
fn move_values(
    position: &Position,
    start: Instant,
    mut solve: impl FnMut(&Position) -> anyhow::Result<Solution>,
) -> anyhow::Result<Vec<proof::MoveValue>> {
    let moves = sorted_moves(position);
    let mut values = Vec::new();
    for (i, &mv) in moves.iter().enumerate() {
        let mut child = *position;
        child.play_unchecked(mv);
        let mut answer = solve(&child)?;
        answer.winning_moves.sort_unstable();
        values.push(proof::MoveValue { mv, wins: !answer.win, winning_replies: answer.winning_moves });
        if start.elapsed() >= Duration::from_secs(10) {
            eprintln!("replies ({}/{}): {}", i + 1, moves.len(), replies_text(position, &values[i..]).trim_end());
        }
    }
    Ok(values)
}

/// A line per move: its value for the side that plays it, and the
/// opponent's winning replies when it loses.
fn replies_text(position: &Position, values: &[proof::MoveValue]) -> String {
    let size = position.size();
    let mover = position.side_to_move();
    let mut text = String::new();
    for value in values {
        let mv = value.mv.to_text(size);
        if value.wins {
            text.push_str(&format!("after {mv}: {mover} wins, every reply loses\n"));
        } else {
            let replies: Vec<String> = value.winning_replies.iter().map(|m| m.to_text(size)).collect();
            text.push_str(&format!("after {mv}: {} wins with {}\n", mover.opposite(), replies.join(" ")));
        }
    }
    text
}

/// `konane solve --verify PATH`: checks the proof with the naive rules and
/// prints the values it shows.
fn verify(path: &Path) -> anyhow::Result<()> {
    let file = if path.is_dir() { path.join(PROOF_FILE) } else { path.to_path_buf() };
    let bytes = konane_files::read_bounded(&file, MAX_PROOF_BYTES, "proof").context("--verify")?;
    let start = Instant::now();
    let proof = proof::Proof::from_bytes(&bytes).with_context(|| format!("{}", file.display()))?;
    let values = proof::verify(&proof).with_context(|| format!("{}: the proof does not hold", file.display()))?;
    let winning: Vec<String> =
        values.moves.iter().filter(|v| v.wins).map(|v| v.mv.to_text(proof.position.size())).collect();
    let mut report = format!(
        "verified: {}\nvalue: {}\nwinning: {}\n",
        proof.position,
        if values.win { "W" } else { "L" },
        winning.join(" ")
    );
    report.push_str(&replies_text(&proof.position, &values.moves));
    report.push_str(&format!(
        "checked with the naive rules: {} positions, {} bytes, {:.1}s\n",
        values.positions,
        bytes.len(),
        start.elapsed().as_secs_f64()
    ));
    super::stdout().write_all(report.as_bytes())?;
    Ok(())
}
