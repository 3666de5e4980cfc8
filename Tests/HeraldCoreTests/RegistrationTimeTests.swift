import HeraldCore
import Testing

@Suite struct RegistrationTimeTests {
    func ms(_ s: String) -> Int64?? {
        switch RegistrationTime.milliseconds(.string(s)) {
        case .success(let v): return .some(v)
        case .failure: return nil
        }
    }

    @Test func readsISO8601AndEpochSecondsAndMilliseconds() {
        #expect(ms("2023-11-14T22:13:20Z") == .some(1_700_000_000_000))
        #expect(ms("2023-11-14T22:13:20.250Z") == .some(1_700_000_000_250))
        #expect(ms("2023-11-15T00:13:20+02:00") == .some(1_700_000_000_000))
        #expect(ms("2023-11-14T21:13:20-0100") == .some(1_700_000_000_000))
        #expect(ms("2023-11-14 22:13:20") == .some(1_700_000_000_000), "no offset: UTC")
        #expect(ms("2023-11-14") == .some(1_699_920_000_000))
        #expect(ms("1700000000") == .some(1_700_000_000_000), "epoch seconds")
        #expect(ms("1700000000.5") == .some(1_700_000_000_500))
        #expect(ms("1700000000123") == .some(1_700_000_000_123), "epoch milliseconds")
        #expect(ms(" 1700000000 ") == .some(1_700_000_000_000))
        #expect(ms("") == .some(nil), "empty: nothing known")
        #expect(RegistrationTime.milliseconds(.number("1700000000")) == .success(1_700_000_000_000))
        #expect(RegistrationTime.milliseconds(.null) == .success(nil))
    }

    @Test func refusesWhatIsNotATime() {
        for bad in ["yesterday", "2023-13-01", "2023-02-30", "2023-11-14T25:00:00Z", "2023-11-14T10:00:00Zjunk", "17e8", "-5", "2023-11-14T10"] {
            #expect(ms(bad) == nil, "\(bad)")
        }
        guard case .failure(let f) = RegistrationTime.milliseconds(.bool(true)) else { Issue.record("a bool is not a time"); return }
        #expect(f.message.contains("\"true\" is not a time"))
    }

    @Test func formatsAndReadsBackISO8601() {
        #expect(RegistrationTime.iso8601(milliseconds: 1_700_000_000_123) == "2023-11-14T22:13:20.123Z")
        #expect(RegistrationTime.iso8601(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(RegistrationTime.iso8601(milliseconds: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(RegistrationTime.iso8601Milliseconds("2023-11-14T22:13:20.123Z") == 1_700_000_000_123)
    }
}
