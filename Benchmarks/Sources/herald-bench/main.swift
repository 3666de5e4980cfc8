import Foundation

/// Micro-benchmarks of single pipeline stages, printed as one JSON object per line for
/// Benchmarks/run_bench.py. `herald-bench state [recipients]`.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "state":
    StateBench.run(recipients: arguments.dropFirst().first.flatMap(Int.init) ?? 1_000_000, ingestOnly: arguments.dropFirst(2).first == "ingest")
default:
    FileHandle.standardError.write(Data("usage: herald-bench state [recipients]\n".utf8))
    exit(2)
}
