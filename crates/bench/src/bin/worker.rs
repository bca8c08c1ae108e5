//! A numa_test worker on its own, for the library's tests and benchmarks (the `homenode`
//! binary has the same worker as `homenode bench worker`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match bench::worker::main_with_args(&args) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("homenode-bench-worker: {e}");
            std::process::exit(2);
        }
    }
}
