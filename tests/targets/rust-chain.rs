// SPDX-License-Identifier: MIT
// A Rust target with a known hot chain main -> cprof_middle ->
// Table<K>::churn -> cprof_leaf, for the demangling test: a generic impl
// (legacy mangling writes it with $LT$/$GT$ escapes and a hash suffix).
// Runs -s SECONDS (default 30), writes -r FILE when ready.
use std::collections::HashMap;

use std::time::{Duration, Instant};

struct Table<K> {
    map: HashMap<K, u64>,
}

impl<K: std::hash::Hash + Eq + Copy> Table<K> {
    #[inline(never)]
    fn churn(&mut self, keys: &[K]) -> u64 {
        let mut s = 0u64;
        for k in keys {
            *self.map.entry(*k).or_insert(0) += 1;
            s = s.wrapping_add(cprof_leaf(s));
        }
        s
    }
}

#[inline(never)]
fn cprof_leaf(x: u64) -> u64 {
    let mut v = x;
    for i in 0..20000u64 {
        v = unsafe { std::ptr::read_volatile(&v.wrapping_mul(6364136223846793005).wrapping_add(i)) };
    }
    v
}

#[inline(never)]
fn cprof_middle(t: &mut Table<u32>, keys: &[u32]) -> u64 {
    t.churn(keys)
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
    let mut t = Table { map: HashMap::new() };
    let keys: Vec<u32> = (0..64).collect();
    if let Some(path) = ready {
        std::fs::write(path, "ready\n").expect("cannot write the ready file");
    }
    let end = Instant::now() + Duration::from_secs(secs);
    let mut acc = 0u64;
    while Instant::now() < end {
        acc = acc.wrapping_add(cprof_middle(&mut t, &keys));
    }
    println!("result: OK {}", acc & 1);
}
