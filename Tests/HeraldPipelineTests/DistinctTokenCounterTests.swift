import Foundation
import HeraldCore
import HeraldState
@testable import HeraldPipeline
import HeraldTestSupport
import Testing

@Suite struct DistinctTokenCounterTests {
    func token(_ i: Int, bytes: Int = 32) -> DeviceToken {
        try! DeviceToken.normalize(String(format: "%0\(bytes * 2)x", i)).get()
    }

    /// Small runs and a small fan-in, so that one test spills many runs and merges them down
    /// more than once: the count must not depend on where the run boundaries fall.
    @Test func countsEachTokenOnceAcrossRunsAndMerges() throws {
        for (capacity, fanIn) in [(1_000_000, 32), (64, 2), (100, 3), (1000, 4)] {
            let counter = DistinctTokenCounter(runCapacity: capacity, fanIn: fanIn)
            for round in 0..<3 {
                for i in 0..<5_000 where round == 0 || i % 3 == round {
                    try counter.insert(token(i))
                }
            }
            #expect(try counter.count() == 5_000, "capacity \(capacity), fan-in \(fanIn)")
            // Counting again, and inserting after a count, still counts each token once.
            #expect(try counter.count() == 5_000)
            try counter.insert(token(5_000))
            try counter.insert(token(17))
            #expect(try counter.count() == 5_001)
        }
    }

    /// Tokens are compared whole: a token and a longer one it is the prefix of are two tokens.
    @Test func comparesWholeTokensOfAnyLength() throws {
        let counter = DistinctTokenCounter(runCapacity: 2, fanIn: 2)
        for t in [token(7, bytes: 8), token(7, bytes: 9), token(8, bytes: 8), token(7, bytes: 8), token(7, bytes: 100)] {
            try counter.insert(t)
        }
        #expect(try counter.count() == 4)
    }

    @Test func emptyCountsZero() throws {
        #expect(try DistinctTokenCounter().count() == 0)
    }

    /// The scratch file is unlinked at once: nothing is left in the directory, even while counting.
    @Test func leavesNoFileBehind() throws {
        let dir = TemporaryDirectory("distinct")
        let counter = DistinctTokenCounter(directory: dir.path, runCapacity: 10, fanIn: 4)
        for i in 0..<1_000 { try counter.insert(token(i)) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        #expect(try counter.count() == 1_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test func anUnwritableDirectoryIsAnErrorSayingSo() throws {
        let counter = DistinctTokenCounter(directory: "/nonexistent-herald-dir", runCapacity: 4, fanIn: 2)
        let error = try #require(throws: ScratchFileError.self) {
            for i in 0..<10 { try counter.insert(token(i)) }
        }
        #expect(error.description == "sorting device tokens: cannot create a temporary file in /nonexistent-herald-dir: No such file or directory (errno 2)")
    }
}
