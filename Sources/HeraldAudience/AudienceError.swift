public import HeraldCore

/// A problem with an audience file as a whole. Any of these stops the run before the first push
/// (exit 2): sending to a silently shortened or misread audience is worse than not sending.
/// Row-level problems are not errors; they are `AudienceEvent.invalid` rows.
///
/// Every case names the file as the job wrote it (`AudienceFile.name`), and the line or
/// compressed byte offset where there is one.
public enum AudienceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `open` said ENOENT.
    case notFound(file: String)
    /// `open`/`fstat` failed for another reason, or the path is a directory.
    case cannotOpen(file: String, reason: String)
    /// `read` failed; `offset` is the byte of the file the read started at.
    case readFailed(file: String, offset: Int, reason: String)
    /// The gzip data ended before the end of a member (a partial upload or copy).
    case truncatedGzip(file: String, offset: Int)
    /// zlib rejected the data; `detail` is zlib's own message.
    case corruptGzip(file: String, offset: Int, detail: String)
    /// zlib could not be set up (out of memory, library mismatch).
    case zlib(file: String, detail: String)
    /// A CSV file with no header row (nothing but blank lines, or nothing at all).
    case emptyFile(file: String)
    /// A file with no data row: a CSV header alone, or nothing but blank lines (an export that
    /// failed halfway, or a query that matched nothing) unless `audience.allow_empty` says so.
    case noDataRows(file: String, format: AudienceFormat)
    /// The CSV header lacks the token column the job names.
    case missingTokenColumn(file: String, line: Int, column: String, columns: [String])
    /// The CSV header lacks a column another job key names (`key`: `audience.id_field`, …).
    case missingColumn(file: String, line: Int, column: String, key: String, columns: [String])
    /// The CSV header is unusable for another reason (duplicate column, bad UTF-8).
    case badHeader(file: String, line: Int, detail: String)
    /// A quoted CSV field was still open at the end of the file: everything after the opening
    /// quote would otherwise be swallowed into one field.
    case unterminatedQuote(file: String, line: Int)
    /// One record is longer than the reader will buffer; almost always an unclosed quote or a
    /// binary file.
    case recordTooLong(file: String, line: Int, limit: Int)

    public var description: String {
        switch self {
        case .notFound(let file):
            return "audience file not found: \(file)"
        case .cannotOpen(let file, let reason):
            return "\(file): cannot open: \(reason)"
        case .readFailed(let file, let offset, let reason):
            return "\(file): read error at byte \(offset): \(reason)"
        case .truncatedGzip(let file, let offset):
            return "\(file): gzip stream truncated at byte \(offset)"
        case .corruptGzip(let file, let offset, let detail):
            return "\(file): corrupt gzip data at byte \(offset) (\(detail))"
        case .zlib(let file, let detail):
            return "\(file): zlib error: \(detail)"
        case .emptyFile(let file):
            return "\(file): empty file (no header)"
        case .noDataRows(let file, let format):
            let what = format == .csv ? "a header and no data row" : "no data row"
            return "\(file): \(what): an empty export must not look like an empty audience "
                + "(set audience.allow_empty: true if this campaign may have no recipients)"
        case .missingTokenColumn(let file, let line, let column, let columns):
            return "\(file) line \(line): header has no column \"\(column)\" (columns: \(columns.joined(separator: ", ")))"
        case .missingColumn(let file, let line, let column, let key, let columns):
            return "\(file) line \(line): header has no column \"\(column)\" named by \(key) (columns: \(columns.joined(separator: ", ")))"
        case .badHeader(let file, let line, let detail):
            return "\(file) line \(line): \(detail)"
        case .unterminatedQuote(let file, let line):
            return "\(file) line \(line): quoted field is never closed (reached end of file)"
        case .recordTooLong(let file, let line, let limit):
            return "\(file) line \(line): record longer than \(limit / (1024 * 1024)) MiB (an unclosed quote?)"
        }
    }
}
