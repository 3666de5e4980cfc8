internal import CCurlNghttp2

/// What CCurlNghttp2 did for one sender's connections (`herald_shim_counts`): each worker adds
/// the difference its thread's counts made over its run. For tests, which see through it that
/// each of the shims is in the path.
struct ShimCounts: Equatable {
    var resetsDropped = 0, resetsPassed = 0
    var framesCollected = 0, writesMade = 0
    var bodiesSplit = 0
    var answerFieldsTaken = 0, answerFieldsDropped = 0

    /// The calling thread's counts so far.
    static func onThisThread() -> ShimCounts {
        var c = herald_shim_counts()
        herald_shim_counts_on_this_thread(&c)
        return ShimCounts(resetsDropped: Int(c.resets_dropped), resetsPassed: Int(c.resets_passed),
                          framesCollected: Int(c.frames_collected), writesMade: Int(c.writes_made),
                          bodiesSplit: Int(c.bodies_split),
                          answerFieldsTaken: Int(c.answer_fields_taken), answerFieldsDropped: Int(c.answer_fields_dropped))
    }

    /// Adds what the calling thread counted since `before`.
    mutating func addThisThread(since before: ShimCounts) {
        let now = Self.onThisThread()
        resetsDropped += now.resetsDropped - before.resetsDropped
        resetsPassed += now.resetsPassed - before.resetsPassed
        framesCollected += now.framesCollected - before.framesCollected
        writesMade += now.writesMade - before.writesMade
        bodiesSplit += now.bodiesSplit - before.bodiesSplit
        answerFieldsTaken += now.answerFieldsTaken - before.answerFieldsTaken
        answerFieldsDropped += now.answerFieldsDropped - before.answerFieldsDropped
    }
}
