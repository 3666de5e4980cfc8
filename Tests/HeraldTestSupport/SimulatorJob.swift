/// The top of the job file most end-to-end tests write: `campaign` reading `audience` (paths as
/// the job file sees them) and sending to the in-process simulator, which logs every request to
/// `../out/<campaign>.ndjson` for `RequestLog`. The test adds its own `push` and what it tests.
public func simulatorJobHead(campaign: String, audience: [String], streamsPerConnection: Int = 20) -> String {
    """
    campaign: \(campaign)
    audience: { files: [\(audience.joined(separator: ", "))] }
    apns:
      endpoint: simulator
      topic: com.example.app
      streams_per_connection: \(streamsPerConnection)
      simulator: { log: ../out/\(campaign).ndjson }
    """
}
