import Foundation

/// Micro-benchmarks of single pipeline stages, printed as one JSON object per line for
/// Benchmarks/run_bench.py. `herald-bench state [recipients] [ingest | stream [chunk]]`.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "state":
    let mode = arguments.dropFirst(2).first
    let recipients = arguments.dropFirst().first.flatMap(Int.init) ?? 1_000_000
    if mode == "stream" {
        StateBench.stream(recipients: recipients, chunk: arguments.dropFirst(3).first.flatMap(Int.init) ?? 50)
    } else {
        StateBench.run(recipients: recipients, ingestOnly: mode == "ingest")
    }
default:
    FileHandle.standardError.write(Data("usage: herald-bench state [recipients] [ingest | stream [chunk]]\n".utf8))
    exit(2)
}
