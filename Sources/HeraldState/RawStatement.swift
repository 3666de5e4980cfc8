import GRDB
import GRDBSQLite

/// Binds and steps a GRDB-prepared statement through SQLite's C API, for the loops that run once
/// per recipient: appending staged rows, reading tokens for deduplication, and the send-side
/// checkpoints (claiming a batch as inflight, recording its answers).
///
/// Why not GRDB's `execute(arguments:)` there: it boxes every value into a `DatabaseValue` array
/// (and each payload into `Data`), several times the cost of binding straight into the prepared
/// statement, and in these loops that boxing would be most of the time of ingesting an audience.
/// Everything else in HeraldState goes through GRDB.
struct RawStatement {
    let statement: Statement
    let db: Database
    private var handle: OpaquePointer { statement.sqliteStatement }
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
    private static let `static` = unsafeBitCast(OpaquePointer(bitPattern: 0), to: sqlite3_destructor_type.self)
    /// Where an empty value points: SQLite binds NULL for a null pointer, even with length 0.
    private static var empty: UnsafeRawPointer { UnsafeRawPointer(bitPattern: 1)! }

    init(_ db: Database, sql: String) throws {
        self.db = db
        self.statement = try db.makeStatement(sql: sql)
    }

    /// The connection's cached prepared statement for `sql` (GRDB's statement cache): for the
    /// statements the send loop runs on every commit, a few hundred times a second.
    init(cached db: Database, sql: String) throws {
        self.db = db
        self.statement = try db.cachedStatement(sql: sql)
    }

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
    func bind(_ index: Int32, _ value: Int) { sqlite3_bind_int64(handle, index, Int64(value)) }
    func bindNull(_ index: Int32) { sqlite3_bind_null(handle, index) }

    func bind(_ index: Int32, _ value: String) {
        var value = value
        _ = value.withUTF8 { sqlite3_bind_text(handle, index, UnsafeRawPointer($0.baseAddress)?.assumingMemoryBound(to: CChar.self),
                                           Int32($0.count), Self.transient) }
    }

    func bind(_ index: Int32, _ value: String?) { if let value { bind(index, value) } else { bindNull(index) } }
    func bind(_ index: Int32, _ value: Int?) { if let value { bind(index, value) } else { bindNull(index) } }
    func bind(_ index: Int32, _ value: Int64?) { if let value { bind(index, value) } else { bindNull(index) } }
    func bind(_ index: Int32, _ value: Double?) { if let value { sqlite3_bind_double(handle, index, value) } else { bindNull(index) } }

    /// Binds text or a blob without copying it (SQLITE_STATIC: "SQLite assumes that the
    /// information is in static, unmanaged space and does not need to be freed",
    /// https://sqlite.org/c3ref/bind_blob.html): the caller keeps `bytes` alive and unchanged
    /// until the statement has run. A copying (SQLITE_TRANSIENT) bind frees the previous value's
    /// buffer and mallocs a new one, under SQLite's memory-statistics mutex, six times a staged row.
    func bindStatic(_ index: Int32, text bytes: UnsafeRawBufferPointer) {
        let base = (bytes.baseAddress ?? Self.empty).assumingMemoryBound(to: CChar.self)
        sqlite3_bind_text(handle, index, base, Int32(bytes.count), Self.static)
    }

    func bindStatic(_ index: Int32, blob bytes: UnsafeRawBufferPointer) {
        sqlite3_bind_blob(handle, index, bytes.baseAddress ?? Self.empty, Int32(bytes.count), Self.static)
    }

    /// Forgets every binding (after `bindStatic`, so no pointer outlives the caller's bytes).
    func clearBindings() { sqlite3_clear_bindings(handle) }

    /// Runs an INSERT/UPDATE/DELETE with the current bindings and readies the statement for the next.
    func execute() throws {
        let rc = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard rc == SQLITE_DONE else { throw error(rc) }
    }

    /// Steps a SELECT; `row` sees each row's columns until it returns.
    func forEachRow(_ row: (RawRow) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw error(rc) }
            try row(RawRow(handle: handle))
        }
    }

    private func error(_ rc: Int32) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
    }
}

/// One row of a `RawStatement` SELECT, valid only inside the callback.
struct RawRow {
    let handle: OpaquePointer
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func string(_ column: Int32) -> String { String(decoding: bytes(column), as: UTF8.self) }
    func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }
    func optionalInt(_ column: Int32) -> Int? { isNull(column) ? nil : int(column) }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : sqlite3_column_double(handle, column) }
    func byteArray(_ column: Int32) -> [UInt8] { Array(bytes(column)) }
    func optionalBytes(_ column: Int32) -> UnsafeRawBufferPointer? { isNull(column) ? nil : bytes(column) }
    /// The column's bytes (text or blob), without copying.
    func bytes(_ column: Int32) -> UnsafeRawBufferPointer {
        // blob first, then bytes: SQLite's documented order, no conversion in between
        // (https://sqlite.org/c3ref/column_blob.html).
        let base = sqlite3_column_blob(handle, column)
        return UnsafeRawBufferPointer(start: base, count: Int(sqlite3_column_bytes(handle, column)))
    }
}
