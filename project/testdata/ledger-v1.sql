CREATE TABLE IF NOT EXISTS batches(
	id      INTEGER PRIMARY KEY,
	digest  BLOB NOT NULL UNIQUE,
	source  TEXT NOT NULL,
	units   INTEGER NOT NULL,
	copies  INTEGER NOT NULL,
	created INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS units(
	id        INTEGER PRIMARY KEY,
	batch     INTEGER NOT NULL REFERENCES batches(id),
	idx       INTEGER NOT NULL,
	copies    INTEGER NOT NULL,
	status    TEXT NOT NULL DEFAULT 'open',
	canonical TEXT,
	status_at INTEGER,
	UNIQUE(batch, idx));
CREATE INDEX IF NOT EXISTS units_status ON units(status);
CREATE TABLE IF NOT EXISTS jobs(
	cid       TEXT PRIMARY KEY,
	unit      INTEGER NOT NULL REFERENCES units(id),
	copy      INTEGER NOT NULL,
	signed    BLOB NOT NULL,
	listing   BLOB NOT NULL,
	state     TEXT NOT NULL,
	acks      INTEGER NOT NULL DEFAULT 0,
	prepared  INTEGER NOT NULL,
	submitted INTEGER,
	collected INTEGER,
	unservable_since INTEGER,
	UNIQUE(unit, copy));
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS results(
	cid        TEXT PRIMARY KEY REFERENCES jobs(cid),
	client     TEXT NOT NULL,
	client_key BLOB NOT NULL,
	output     BLOB NOT NULL,
	exit_code  INTEGER NOT NULL,
	error      TEXT NOT NULL,
	cpu_ms     INTEGER NOT NULL,
	wall_ms    INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	harvested  INTEGER NOT NULL,
	valid      INTEGER,
	killed     TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS results_ungraded ON results(cid) WHERE valid IS NULL;
CREATE TABLE IF NOT EXISTS to_validate(
	unit INTEGER PRIMARY KEY REFERENCES units(id));
CREATE TABLE IF NOT EXISTS blobs(
	key       BLOB PRIMARY KEY,
	manifest  BLOB NOT NULL,
	created   INTEGER NOT NULL,
	withdrawn INTEGER);
CREATE TABLE IF NOT EXISTS unit_blobs(
	unit INTEGER NOT NULL REFERENCES units(id),
	key  BLOB NOT NULL REFERENCES blobs(key),
	PRIMARY KEY(unit, key));
CREATE INDEX IF NOT EXISTS unit_blobs_key ON unit_blobs(key);
-- A ledger of the version before jobs and results were keyed by
-- sequence (2026-12): the schema above, results.receipt (added by an
-- earlier migration), and three jobs recorded in an order that is not
-- their CIDs' order: unit 1 valid and credited, unit 2 with a result not
-- yet graded nor queued, unit 3 prepared.
ALTER TABLE results ADD COLUMN receipt INTEGER;
INSERT INTO batches(id, digest, source, units, copies, created) VALUES(1, x'0102', 'jobs.yaml', 3, 1, 1700000000000);
INSERT INTO units(id, batch, idx, copies, status, canonical, status_at) VALUES
	(1, 1, 0, 1, 'valid', 'bafyreidwmhpclqnxccq7gpoltcd4fibahkpbcum77777xd53htg5gmz57a', 1700000005000),
	(2, 1, 1, 1, 'open', NULL, NULL),
	(3, 1, 2, 1, 'open', NULL, NULL);
INSERT INTO jobs(cid, unit, copy, signed, listing, state, acks, prepared, submitted, collected) VALUES
	('bafyreidvkugdf3krlsvoazvzkrgw7pyi2my2ejo2aodavl2k72y3m5adt4', 3, 0, x'03', x'33', 'prepared', 0, 1700000000000, NULL, NULL),
	('bafyreidwmhpclqnxccq7gpoltcd4fibahkpbcum77777xd53htg5gmz57a', 1, 0, x'01', x'11', 'collected', 5, 1700000000000, 1700000001000, 1700000006000),
	('bafyreidscjom7ndl6i3vvoncchora6hbxhr5dgff6bl6lph23ng3k6tb2m', 2, 0, x'02', x'22', 'harvested', 5, 1700000000000, 1700000001000, NULL);
INSERT INTO results(cid, client, client_key, output, exit_code, error, cpu_ms, wall_ms, at, harvested, valid, killed, receipt) VALUES
	('bafyreidwmhpclqnxccq7gpoltcd4fibahkpbcum77777xd53htg5gmz57a', 'w1', x'77', x'6f31', 0, '', 10, 11, 1700000003000, 1700000003500, 1, '', 1),
	('bafyreidscjom7ndl6i3vvoncchora6hbxhr5dgff6bl6lph23ng3k6tb2m', 'w2', x'77', x'6f32', 0, '', 20, 21, 1700000004000, 1700000004500, NULL, '', NULL);
