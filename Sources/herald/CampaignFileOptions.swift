import ArgumentParser

/// `--state` and `--reports`, the options `herald run` and `herald report` share: where the
/// campaign's state file and reports go instead of the job's `state` and `reports`.
struct CampaignFileOptions: ParsableArguments {
    @Option(help: "State file to use instead of the job's `state`.")
    var state: String?

    @Option(help: "Reports directory to use instead of the job's `reports`.")
    var reports: String?

    /// Neither option was given.
    var isEmpty: Bool { state == nil && reports == nil }
}
