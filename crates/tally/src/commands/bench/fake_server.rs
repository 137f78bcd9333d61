//! `tally bench fake-server`: serves until killed; prints its base URL on stdout first.

use std::net::SocketAddr;

use super::args::{FakeServerArgs, ModeArg, UsageArg};
use super::usage;
use crate::exit::Status;
use crate::printer;
use tally_bench::SpecError;
use tally_bench::dist::{LengthDist, TimeDist};
use tally_bench::fake::{
    Cold, EngineConfig, FakeConfig, FakeServer, Pause, SeededFault, StreamShape, Timing, UsageMode,
};

fn config(args: &FakeServerArgs) -> Result<FakeConfig, SpecError> {
    let timing = match args.mode {
        ModeArg::Exact => Timing::Exact {
            ttft: TimeDist::parse(&args.ttft)?,
            gap: TimeDist::parse(&args.gap)?,
        },
        ModeArg::Batched => Timing::Batched(EngineConfig {
            step_base_ms: args.step_base,
            step_per_seq_ms: args.step_per_seq,
            prefill_per_token_ms: args.prefill_per_token,
            max_batch: args.max_batch,
        }),
    };
    Ok(FakeConfig {
        timing,
        shape: StreamShape {
            tokens_per_chunk: args.tokens_per_chunk.max(1),
            role_chunk: args.role_chunk,
            ping: args.ping,
            crlf: args.crlf,
            split_at: args.split_at,
            multibyte: false,
        },
        usage: match args.usage {
            UsageArg::Requested => UsageMode::Requested,
            UsageArg::Always => UsageMode::Always,
            UsageArg::Never => UsageMode::Never,
        },
        eos: args.eos.as_deref().map(LengthDist::parse).transpose()?,
        faults: args
            .faults
            .iter()
            .map(|f| SeededFault::parse(f))
            .collect::<Result<_, _>>()?,
        pause: args.pause.as_deref().map(Pause::parse).transpose()?,
        cold: args.cold.as_deref().map(Cold::parse).transpose()?,
        seed: args.seed,
        model: args.model.clone(),
        threads: args.threads.max(1),
    })
}

/// Starts the server and blocks.
pub fn run(args: &FakeServerArgs) -> anyhow::Result<Status> {
    let listen: SocketAddr = match args.listen.parse() {
        Ok(addr) => addr,
        Err(_) => {
            return usage(&format!(
                "--listen {:?}: expected IP:PORT, e.g. 127.0.0.1:0",
                args.listen
            ));
        }
    };
    let config = match config(args) {
        Ok(config) => config,
        Err(err) => return usage(&err.to_string()),
    };
    let server = match FakeServer::start(config, listen, args.allow_remote) {
        Ok(server) => server,
        Err(err) => return usage(&err.to_string()),
    };
    if let Some(path) = &args.address_file {
        std::fs::write(path, format!("{}\n", server.base_url()))?;
    }
    printer::out_line(&server.base_url())?;
    loop {
        std::thread::park();
    }
}
