package wire

// DHTPrefix is the kad-dht protocol prefix of the U.P. overlay, so its DHT
// (/up/kad/1.0.0) never mixes with the public IPFS DHT.
const DHTPrefix = "/up"

// DHTProtocol is the kad-dht protocol ID that DHTPrefix yields.
const DHTProtocol = DHTPrefix + "/kad/1.0.0"

// Stream protocols of U.P. (untyped, so they convert to libp2p's protocol.ID).
// Each carries one request frame and one Reply frame.
const (
	// ProtoHello proves a peer's certificate and position record on connect.
	ProtoHello = "/up/hello/1.0.0"
	// ProtoNear answers a node's nearest known peers to a raw position.
	ProtoNear = "/up/near/1.0.0"
	// ProtoCRL serves the newest CA revocation list a node holds.
	ProtoCRL = "/up/crl/1.0.0"
	// ProtoPing answers an empty request: a liveness probe.
	ProtoPing = "/up/ping/1.0.0"
)

// Blob protocols: a project's blobs (job inputs, WebAssembly modules),
// each on the r nodes closest to its manifest CID (blobs.go).
const (
	// ProtoBlobOffer offers a blob's signed statement and manifest; the
	// node answers the chunks it lacks (from a project, optionally placing
	// the blob on its r closest; from a node, one replica).
	ProtoBlobOffer = "/up/blob/offer/1.0.0"
	// ProtoChunkPut stores one chunk of a blob offered before.
	ProtoChunkPut = "/up/blob/put/1.0.0"
	// ProtoManifestGet returns a held blob's statement and manifest.
	ProtoManifestGet = "/up/blob/manifest/1.0.0"
	// ProtoChunkGet returns a held chunk's bytes by its CID.
	ProtoChunkGet = "/up/blob/chunk/1.0.0"
)

// Frame bounds per protocol, in bytes.
const (
	MaxHelloFrame = 24 << 10
	MaxNearFrame  = 160 << 10
	MaxCRLFrame   = 1<<20 + 1024
	MaxReplyMsg   = 512
)
