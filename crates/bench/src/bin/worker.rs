//! A numa_test worker on its own, for the library's tests and benchmarks (the `homenode`
//! binary has the same worker as `homenode bench worker`); with `hackbench` first, the load
//! peak's helper (`homenode bench hackbench`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("hackbench") => bench::hackbench_procs::helper_main(&args[1..]).map(|()| None),
        _ => bench::worker::main_with_args(&args).map(Some),
    };
    match r {
        Ok(Some(line)) => println!("{line}"),
        Ok(None) => {}
        Err(e) => {
            eprintln!("homenode-bench-worker: {e}");
            std::process::exit(2);
        }
    }
}
