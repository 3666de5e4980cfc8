/// `herald-shared.sqlite` as herald wrote it before the one-ledger migration ("5-one-ledger"): the
/// `.dump` of a file made by real runs of the previous schema (migrations 1 to 4) — two runs of a
/// background campaign with `throttle.silent_per_device_per_hour: 2` over six tokens (twelve
/// silent-push entries, a third run throttled), then two campaigns capped by category `marketing`
/// (`max: 2, per: 1d` and `max: 5, per: 7d`) over six and three of the tokens.
/// Kept as SQL text so the fixture is reviewable and needs no resource bundle.
enum SharedStoreV4Fixture {
    /// A second after the last entry was written (UNIX seconds).
    static let writtenAt = 1795819032.0
    static let sql = #"""
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
INSERT INTO grdb_migrations VALUES('1-shared-meta');
INSERT INTO grdb_migrations VALUES('2-silent-push-ledger');
INSERT INTO grdb_migrations VALUES('3-suppression-list');
INSERT INTO grdb_migrations VALUES('4-frequency-cap-ledger');
CREATE TABLE shared_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE silent_push (
    token TEXT NOT NULL,
    apns_id TEXT NOT NULL,
    campaign TEXT NOT NULL,
    sent_at REAL NOT NULL
);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000001','51719615-7dcc-5fe6-ab90-85ec0f615729','nightly-sync',1795819028.2508764266);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000002','1a83f32b-b51e-5ccb-8d43-3e1017c19100','nightly-sync',1795819028.2508764266);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000003','fbfcaa16-3340-5573-b6c7-889ef75947ab','nightly-sync',1795819028.2508764266);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000004','a01313b4-95d9-5280-afab-3abdaaa84e41','nightly-sync',1795819028.2508764266);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000005','00b611ea-406b-5ca8-a43b-e935c47ce775','nightly-sync',1795819028.2508764266);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000006','94575d5a-a8fc-57fb-94cd-65cfffd24652','nightly-sync',1795819028.2508764266);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000001','69d21826-3581-5a03-b802-b132e30293a7','nightly-sync',1795819028.5631785393);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000002','55f1ff0f-1c47-51b5-a73a-b4e4d305c829','nightly-sync',1795819028.5631785393);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000003','1bfb496d-569b-5d30-805f-ecf129c72ebf','nightly-sync',1795819028.5631785393);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000004','3c6ecf37-5b98-5c86-8bd0-ecde6b4759d1','nightly-sync',1795819028.5631785393);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000005','e8b32985-8a3e-5180-84d1-1e366fe8501d','nightly-sync',1795819028.5631785393);
INSERT INTO silent_push VALUES('0000000000000000000000000000000000000000000000000000000000000006','0d5ae3f0-8859-5074-ac5a-3ba13e672216','nightly-sync',1795819028.5631785393);
CREATE TABLE suppression (
    environment TEXT NOT NULL,
    topic TEXT NOT NULL,
    token TEXT NOT NULL,
    invalidated_at INTEGER NOT NULL,
    reason TEXT NOT NULL,
    campaign TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (environment, topic, token)
) WITHOUT ROWID;
CREATE TABLE frequency_push (
    category TEXT NOT NULL,
    topic TEXT NOT NULL,
    token TEXT NOT NULL,
    apns_id TEXT NOT NULL,
    campaign TEXT NOT NULL,
    sent_at REAL NOT NULL
);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000001','6e71de32-aa82-5ab0-a0e7-1d742c5ac6c1','spring-sale',1795819029.094754219);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000002','496af084-acfe-5584-b36e-3fc65a0aae4a','spring-sale',1795819029.094754219);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000003','64304e48-5865-5e4b-8bf4-b4beb9d845b2','spring-sale',1795819029.094754219);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000004','6ca53ce1-682a-58b0-b993-d2e158c0f85d','spring-sale',1795819029.094754219);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000005','18a3756b-b4fe-594b-8a9a-d20af0859624','spring-sale',1795819029.094754219);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000006','f5dc9ce9-92ea-5734-b96a-29b1c21a549f','spring-sale',1795819029.094754219);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000001','eabfffac-dbbd-5042-b769-f882ebebc42e','winter-sale',1795819031.322880268);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000002','35618cb9-ebed-5047-b8a3-8b27ae2e913f','winter-sale',1795819031.322880268);
INSERT INTO frequency_push VALUES('marketing','com.example.app','0000000000000000000000000000000000000000000000000000000000000003','3b0e951d-2262-5115-93aa-65ab2f6d2d05','winter-sale',1795819031.322880268);
CREATE TABLE frequency_window (category TEXT PRIMARY KEY, longest REAL NOT NULL);
INSERT INTO frequency_window VALUES('marketing',604800.0);
CREATE INDEX silent_push_token ON silent_push(token, sent_at);
CREATE INDEX silent_push_age ON silent_push(sent_at);
CREATE INDEX frequency_push_device ON frequency_push(category, topic, token, sent_at);
CREATE INDEX frequency_push_age ON frequency_push(category, sent_at);
COMMIT;
"""#
}
