// Package client is the volunteer's worker: attached to one or more
// projects, it finds jobs through the index with queries built from the
// machine's resource classes (memory and platform, see QueryFor), claims
// them with the ordered claim protocol, fetches and checks their inputs
// (by URL, or as blobs through Config.Blobs), runs the application under
// wall-clock, CPU-time and memory limits (package runner; see
// Config.MaxCPU), or the job's WebAssembly module in the runner's sandbox
// if the volunteer allows the project's modules, seals the result for the
// project and submits it to the job's nodes. Slots run in parallel;
// between projects CPU time follows the volunteer's resource shares
// (package client/sched); a project with no work, or a failing network, is
// retried with exponential backoff and jitter. It claims only jobs it can
// finish before their T_finish, judged from its on and off periods and
// each application's run times (package client/feasible; kept in
// Config.FeasibleFile), and gives back early a job that can no longer end
// in time (wire.SkipDeadline). Each job's state changes
// are logged at Info. The volunteer's everyday controls (Pause, Resume,
// Attach, Detach; kept in Config.ControlFile) and what the client did and
// why (Explain, History) are methods and routes of its local HTTP API
// (Handler).
package client
