/// herald's own version, printed by `herald --version` and written nowhere else. Report files
/// and job keys are only ever added to between versions (docs/reports.md), never renamed.
public enum HeraldVersion {
    public static let current = "0.9.0"
}
