// SPDX-License-Identifier: MIT
// One Rust function name, two functions: the generic work<T> instantiated
// for u32 and for u64.  Demangled (legacy mangling, hash dropped) both are
// rust_dupnames::work, with distinct raw symbols; go tool pprof -top shows
// one row "rust_dupnames::work", and cprof report must too
// (tests/report-names-rust.test).  main -> work::<u32> (3 calls) and
// work::<u64> (2 calls), and solo, a name of its own (2 calls).
// Runs -s SECONDS (default 30), writes -r FILE when ready.
use std::time::{Duration, Instant};

#[inline(never)]
fn work<T: Copy + Into<u64>>(x: T) -> u64 {
    let mut v: u64 = x.into();
    for i in 0..20000u64 {
        v = unsafe { std::ptr::read_volatile(&v.wrapping_mul(6364136223846793005).wrapping_add(i)) };
    }
    v
}

#[inline(never)]
fn solo(x: u64) -> u64 {
    let mut v = x;
    for i in 0..20000u64 {
        v = unsafe { std::ptr::read_volatile(&v.wrapping_mul(2862933555777941757).wrapping_add(i)) };
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut secs = 30u64;
    let mut ready: Option<String> = None;
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "-s" => secs = args[i + 1].parse().unwrap_or(30),
            "-r" => ready = Some(args[i + 1].clone()),
            _ => {}
        }
        i += 2;
    }
    if let Some(path) = ready {
        std::fs::write(path, "ready\n").expect("cannot write the ready file");
    }
    let end = Instant::now() + Duration::from_secs(secs);
    let mut acc = 0u64;
    let mut n = 0u32;
    while Instant::now() < end {
        for _ in 0..3 {
            acc = acc.wrapping_add(work::<u32>(n));
        }
        for _ in 0..2 {
            acc = acc.wrapping_add(work::<u64>(u64::from(n)));
            acc = acc.wrapping_add(solo(acc));
        }
        n = n.wrapping_add(1);
    }
    println!("result: OK {}", acc & 1);
}
