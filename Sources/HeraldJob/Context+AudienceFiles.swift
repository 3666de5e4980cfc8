#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HeraldCore

extension Context {
    /// `audience.files` entries → the files to read, in order.
    ///
    /// An entry naming an existing file is that file. Otherwise an entry with `*`, `?` or `[` is a
    /// shell glob pattern (warehouse exports are split into `part-00000.csv.gz`, `part-00001…`),
    /// resolved against the job file's directory like any path; its matches are read in sorted
    /// order, so a rerun reads the same files in the same order. A pattern matching no file is an
    /// error: an empty export must not look like an empty audience. A file named twice (by two
    /// patterns, or a pattern and a path) is read once; the same token in different files is a
    /// duplicate, which the state file takes care of.
    func audienceFiles(_ entries: [(name: String, line: Int?)]) throws(JobError) -> [AudienceFile] {
        var files: [AudienceFile] = []
        var seen = Set<String>()
        for (name, line) in entries {
            let path = resolve(name)
            var isDir: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
            var found: [AudienceFile]
            if exists && !isDir.boolValue {
                found = [AudienceFile(name: name, path: path)]
            } else if audienceUnread {
                found = Self.isPattern(name) ? ((try? matches(of: name, line: line)) ?? []) : [AudienceFile(name: name, path: path)]
            } else if Self.isPattern(name) {
                found = try matches(of: name, line: line)
            } else {
                throw JobError(file: file, line: line, "audience file not found: \(name) (looked for \(path))")
            }
            found.removeAll { !seen.insert($0.path).inserted }
            files += found
        }
        return files
    }

    static func isPattern(_ name: String) -> Bool {
        name.utf8.contains { $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "[") }
    }

    /// glob(3) over the pattern, names kept in the form the job wrote them (`../exports/part-1.csv.gz`
    /// for `../exports/part-*.csv.gz`), directories left out.
    private func matches(of pattern: String, line: Int?) throws(JobError) -> [AudienceFile] {
        let expanded = (pattern as NSString).expandingTildeInPath
        // The job's own directory is literal text, even if it contains glob characters.
        let prefix = expanded.hasPrefix("/") ? "" : baseDir.path + "/"
        let full = Self.escaped(prefix) + expanded
        var result = glob_t()
        defer { globfree(&result) }
        let status = glob(full, GLOB_MARK, nil, &result)
        if status == GLOB_NOMATCH {
            throw JobError(file: file, line: line, "audience.files pattern \(pattern) matches no file (looked in \(Self.directory(prefix, expanded)))")
        }
        guard status == 0 else {
            let why = status == GLOB_ABORTED ? "a directory could not be read" : "out of memory"
            throw JobError(file: file, line: line, "audience.files pattern \(pattern) could not be expanded: \(why)")
        }
        var found: [AudienceFile] = []
        for i in 0..<Int(result.gl_pathc) {
            guard let cPath = result.gl_pathv[i] else { continue }
            let match = String(cString: cPath)
            if match.hasSuffix("/") { continue }   // GLOB_MARK: a directory
            let name = prefix.isEmpty || !match.hasPrefix(prefix) ? match : String(match.dropFirst(prefix.count))
            found.append(AudienceFile(name: name, path: URL(fileURLWithPath: match).standardizedFileURL.path))
        }
        guard !found.isEmpty else {
            throw JobError(file: file, line: line, "audience.files pattern \(pattern) matches only directories, no file")
        }
        // Byte order, not glob's locale collation: the same order on every machine.
        return found.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
    }

    private static func escaped(_ literal: String) -> String {
        var out = ""
        for c in literal {
            if "*?[]\\".contains(c) { out.append("\\") }
            out.append(c)
        }
        return out
    }

    /// The directory part of the pattern before its first wildcard, for the error message.
    private static func directory(_ base: String, _ pattern: String) -> String {
        let upToWildcard = base + String(pattern.prefix { !"*?[".contains($0) })
        return URL(fileURLWithPath: (upToWildcard as NSString).deletingLastPathComponent).standardizedFileURL.path
    }
}
