import Foundation
import HeraldCore
import HeraldState
import HeraldTestSupport

/// Dedup + checkpoint alone: audience batches (8,192 rows, as `herald run` commits them; 5 % duplicate tokens, a 120-byte
/// payload each) committed to a fresh state file with their checkpoint, as `herald run` ingests;
/// then the send-side checkpoints (claim as inflight, record the answer) in windows of 500.
/// Run once with synchronous=FULL (what herald uses) and once with NORMAL, to show what
/// surviving a power loss costs.
enum StateBench {
    static func run(recipients: Int, ingestOnly: Bool = false) {
        let batches = makeBatches(recipients)
        for durability in ingestOnly ? [StateStore.Durability.full] : [.full, .normal] {
            let dir = NSTemporaryDirectory() + "herald-bench-state-\(getpid())"
            try? FileManager.default.removeItem(atPath: dir)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            do {
                let store = try StateStore(path: dir + "/bench.sqlite", durability: durability)
                let info = try store.openRun(campaign: CampaignName("bench"))
                let run = store.run(info)
                var clock = ContinuousClock.now
                let cpu0 = cpuSeconds()
                for b in batches { try run.ingest(b) }
                let appendSeconds = seconds(since: clock)
                let appendCPU = cpuSeconds() - cpu0
                try run.markIngestComplete()
                let duplicates = try run.reload().duplicates
                let ingestSeconds = seconds(since: clock)
                let ingestCPU = cpuSeconds() - cpu0
                clock = ContinuousClock.now
                let cpu1 = cpuSeconds()
                var sent = 0
                if ingestOnly { print("{\"ingest_seconds\":\(fmt(ingestSeconds)),\"ingest_cpu_seconds\":\(fmt(ingestCPU)),\"append_cpu_seconds\":\(fmt(appendCPU))}"); continue }
                while true {
                    let claimed = try run.claim(limit: 500)
                    if claimed.isEmpty { break }
                    try run.record(claimed.map { AttemptOutcome(seq: $0.seq, status: .sent, httpStatus: 200) })
                    sent += claimed.count
                }
                let sendSeconds = seconds(since: clock)
                let sendCPU = cpuSeconds() - cpu1
                let name = durability == .full ? "full" : "normal"
                print("{\"bench\":\"state\",\"synchronous\":\"\(name)\",\"rows\":\(recipients),\"duplicates\":\(duplicates),"
                      + "\"append_seconds\":\(fmt(appendSeconds)),\"ingest_seconds\":\(fmt(ingestSeconds)),\"ingest_rows_per_second\":\(Int(Double(recipients) / ingestSeconds)),"
                      + "\"send_checkpoint_seconds\":\(fmt(sendSeconds)),\"send_checkpoints_per_second\":\(Int(Double(sent) / sendSeconds)),"
                      + "\"append_cpu_seconds\":\(fmt(appendCPU)),\"ingest_cpu_seconds\":\(fmt(ingestCPU)),\"ingest_rows_per_cpu_second\":\(Int(Double(recipients) / ingestCPU)),"
                      + "\"send_checkpoint_cpu_seconds\":\(fmt(sendCPU)),\"load_average\":\(fmt(loadAverage()))}")
            } catch {
                FileHandle.standardError.write(Data("state bench: \(error)\n".utf8))
                exit(1)
            }
        }
    }

    /// The send side as `herald run`'s streaming sender drives it: each turn one transaction records
    /// the answers to the oldest `chunk` claimed recipients and claims `chunk` more, with two
    /// chunks' worth outstanding (as with a window of `2 × chunk` in flight). Prints the CPU time
    /// per push, the state file's share of a send.
    static func stream(recipients: Int, chunk: Int) {
        let dir = NSTemporaryDirectory() + "herald-bench-stream-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try StateStore(path: dir + "/bench.sqlite", durability: .full)
            let run = store.run(try store.openRun(campaign: CampaignName("bench")))
            for b in makeBatches(recipients) { try run.ingest(b) }
            try run.markIngestComplete()
            let clock = ContinuousClock.now
            let cpu0 = cpuSeconds()
            var outstanding: [[Int64]] = []
            var sent = 0
            while true {
                let answered = outstanding.count >= 2 || (outstanding.count == 1 && sent > 0) ? outstanding.removeFirst() : []
                let outcomes = answered.map { AttemptOutcome(seq: $0, status: .sent, httpStatus: 200, latencyMs: 12) }
                let claimed = try run.commit(outcomes, maxAttempts: 3, claim: chunk)
                sent += answered.count
                if claimed.isEmpty && outstanding.isEmpty { break }
                if !claimed.isEmpty { outstanding.append(claimed.map(\.seq)) }
            }
            let cpu = cpuSeconds() - cpu0
            print("{\"bench\":\"state-stream\",\"rows\":\(recipients),\"sent\":\(sent),\"chunk\":\(chunk),\"seconds\":\(fmt(seconds(since: clock))),"
                  + "\"cpu_seconds\":\(fmt(cpu)),\"cpu_us_per_push\":\(fmt(cpu / Double(max(sent, 1)) * 1e6))}")
        } catch {
            FileHandle.standardError.write(Data("state bench: \(error)\n".utf8))
            exit(1)
        }
    }

    static func makeBatches(_ n: Int) -> [IngestBatch] {
        // A seeded generator and hex written byte by byte: the same audience every run, built
        // quickly (String(format:) per byte and the system generator would make building it take
        // longer than the timed part). Building it is not timed.
        var rng = SplitMix64(seed: 0x6865_7261_6c64)
        let digits = Array("0123456789abcdef".utf8)
        let payload = Array(#"{"aps":{"alert":{"title":"Hi Camille","body":"3 new messages in Lyon are waiting for you"},"badge":3},"c":"x"}"#.utf8)
        var out: [IngestBatch] = []
        var batch = IngestBatch()
        var recent: [DeviceToken] = []
        for i in 0..<n {
            let token: DeviceToken
            if i % 20 == 19, !recent.isEmpty {
                token = recent[Int(rng.next() % UInt64(recent.count))]
            } else {
                var hex = [UInt8](repeating: 0, count: 64)
                for w in 0..<4 {
                    let v = rng.next()
                    for d in 0..<16 { hex[w * 16 + d] = digits[Int((v >> UInt64(60 - 4 * d)) & 15)] }
                }
                token = try! DeviceToken.normalize(utf8: hex).get()
                if recent.count < 4096 { recent.append(token) } else { recent[Int(rng.next() % 4096)] = token }
            }
            batch.recipients.append(IngestBatch.Recipient(token: token, location: RowLocation(file: "a.csv", line: i + 2),
                                                          recipientId: "u\(i)", payload: payload,
                                                          apnsId: "00000000-0000-5000-8000-000000000000"))
            batch.rows += 1
            batch.checkpointFile = 0
            batch.checkpointLine = i + 2
            if batch.rows == 8_192 { out.append(batch); batch = IngestBatch() }
        }
        if !batch.isEmpty { out.append(batch) }
        return out
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static func fmt(_ d: Double) -> String { String(format: "%.3f", d) }

    /// User + system CPU time of this process: on a loaded machine the wall-clock figures are
    /// noise, and the CPU figures say what the state stage itself costs.
    static func cpuSeconds() -> Double {
        var u = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
        return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
    }

    static func loadAverage() -> Double {
        var l = [Double](repeating: 0, count: 3)
        return getloadavg(&l, 3) > 0 ? l[0] : -1
    }
}
