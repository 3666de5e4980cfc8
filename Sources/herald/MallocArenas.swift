import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Bounds glibc's malloc arenas before any thread starts. glibc gives each new thread that
/// allocates its own arena, up to 8 per core (https://man7.org/linux/man-pages/man3/mallopt.3.html,
/// M_ARENA_MAX), and each keeps the memory its thread freed. herald's threads (one per connection,
/// the reader, the runner, Dispatch's pool) all allocate per request, so at thousands of streams
/// the idle arenas held megabytes beyond what the requests in flight did (docs/delivery.md, "What a
/// request in flight costs"; the figure: CHANGELOG.md). More arenas than cores do not make
/// allocation faster on them.
/// An operator's own MALLOC_ARENA_MAX wins.
enum MallocArenas {
    static func bound() {
        #if canImport(Glibc)
        guard ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil else { return }
        // mallopt and M_ARENA_MAX (-8) come from <malloc.h>, which Swift's Glibc module leaves out.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        _ = mallopt(-8, Int32(max(4, ProcessInfo.processInfo.activeProcessorCount)))
        #endif
    }
}
