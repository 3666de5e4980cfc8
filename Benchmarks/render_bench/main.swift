// render-bench: payloads rendered per second on one core, for Apple's five example payloads as
// shipped in samples/templates/ (3–4 placeholders each, typed badge included), loaded through the
// job loader exactly as `herald run` loads them. Release build only; `make bench` runs it through
// Benchmarks/render_bench.py. Prints one line per template and, with --json, a JSON summary.
import Foundation
import HeraldCore
import HeraldJob
import HeraldPayload

struct Options {
    var templates = "samples/templates"
    var seconds = 1.0
    var json = false

    init(_ args: [String]) {
        var i = 0
        while i < args.count {
            switch args[i] {
            case "--templates": i += 1; templates = args[i]
            case "--seconds": i += 1; seconds = Double(args[i]) ?? seconds
            case "--json": json = true
            default: FileHandle.standardError.write(Data("render-bench: unknown argument \(args[i])\n".utf8)); exit(2)
            }
            i += 1
        }
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
let templatesDir = URL(fileURLWithPath: options.templates).standardizedFileURL

/// A job file per template in a scratch directory, so the template goes through JobLoader.
func loadPush(template n: Int) throws -> PushSpec {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("render-bench-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    try Data("token\n".utf8).write(to: dir.appendingPathComponent("a.csv"))
    let job = dir.appendingPathComponent("job.yaml")
    try Data("""
        campaign: render-bench
        audience: { files: [a.csv] }
        apns: { endpoint: simulator, topic: com.example.app }
        push: { template_file: \(templatesDir.appendingPathComponent("example\(n).json").path) }
        """.utf8).write(to: job)
    return try JobLoader.load(path: job.path).push
}

/// Recipients as a CSV gives them (all strings), varied, some non-ASCII, one needing escapes.
func makeRecords(_ count: Int) -> [AudienceRecord] {
    let names = ["Ada", "Grace", "Zoë", "José", "李雷", "Ken", "Frances \"Fran\"", "Margaret", "Linus", "Radia"]
    let cities = ["Paris", "Zürich", "Montréal", "Osaka", "São Paulo", "Berlin"]
    return (0..<count).map { i in
        let token = DeviceToken(trustedCanonical: String(repeating: String(format: "%02x", i % 256), count: 32))
        let fields: [String: FieldValue] = [
            "first_name": .string(names[i % names.count]), "sender_name": .string(names[(i + 3) % names.count]),
            "opponent": .string(names[(i + 5) % names.count]), "campaign_tag": .string("spring-\(i % 7)"),
            "unread": .string(String(i % 100)), "game_id": .string("g-\(i)"), "city": .string(cities[i % cities.count]),
            "score": .string("\(i % 10).5"), "email": .string("user\(i)@example.com"), "message_id": .string("m\(i)"),
        ]
        return AudienceRecord(location: RowLocation(file: "bench.csv", line: i + 2), token: token, fields: fields)
    }
}

/// This thread's CPU time in seconds. The figure is payloads per second of one core's time, so
/// other processes on a shared machine slow the wall clock, not the figure.
func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// Renders into one reused buffer for `seconds` of CPU time, in rounds of 100,000. Returns
/// payloads per CPU second (the figure) and per wall second (lower when the machine is busy).
func measure(_ renderers: [PayloadRenderer], _ records: [AudienceRecord], seconds: Double) -> (cpu: Double, wall: Double) {
    var buffer: [UInt8] = []
    buffer.reserveCapacity(4096)
    var bytes = 0
    let mask = records.count - 1
    let batch = 100_000
    var rendered = 0
    let clock = ContinuousClock()
    let wallStart = clock.now
    let cpuStart = threadCPUSeconds()
    // Borrowed through unsafe buffers: the pipeline hands the renderer a record it already
    // owns, so copying records out of an array (retains) would be the bench's cost, not herald's.
    renderers.withUnsafeBufferPointer { renderers in
        records.withUnsafeBufferPointer { records in
            while threadCPUSeconds() - cpuStart < seconds {
                for _ in 0..<batch {
                    let status = renderers[rendered % renderers.count].render(records[rendered & mask], locale: nil, into: &buffer)
                    guard case .payload = status else { fatalError("render failed: \(status)") }
                    bytes &+= buffer.count
                    rendered &+= 1
                }
            }
        }
    }
    let cpu = threadCPUSeconds() - cpuStart
    let elapsed = clock.now - wallStart
    let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    if bytes == 0 { fatalError("nothing rendered") }
    return (Double(rendered) / cpu, Double(rendered) / wall)
}

do {
    let records = makeRecords(4096)
    var renderers: [PayloadRenderer] = []
    var results: [[String: Any]] = []
    for n in 1...5 {
        let renderer = try PayloadRenderer(push: try loadPush(template: n))
        renderers.append(renderer)
        guard case .payload(let sample) = renderer.render(records[0], locale: nil) else { fatalError("example\(n) does not render") }
        let (rate, wall) = measure([renderer], records, seconds: options.seconds)
        results.append(["template": "example\(n).json", "payloads_per_cpu_second": Int(rate), "payloads_per_wall_second": Int(wall),
                        "bytes": sample.count])
        if !options.json {
            print("render example\(n).json (\(sample.count) bytes): \(Int(rate)) payloads per CPU second (one core), \(Int(wall)) per wall second")
        }
    }
    let (all, allWall) = measure(renderers, records, seconds: options.seconds)
    if options.json {
        let summary: [String: Any] = ["templates": results, "all_five_payloads_per_cpu_second": Int(all),
                                      "all_five_payloads_per_wall_second": Int(allWall), "target": 1_000_000]
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    } else {
        print("render all five, round robin: \(Int(all)) payloads per CPU second (one core; target ≥ 1,000,000), \(Int(allWall)) per wall second")
    }
} catch {
    FileHandle.standardError.write(Data("render-bench: \(error)\n".utf8))
    exit(2)
}
