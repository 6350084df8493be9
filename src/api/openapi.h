// The OpenAPI documents kubectl and the client libraries read before they write:
//
//   GET /openapi/v3                 the index of group versions, each with its document's URL
//   GET /openapi/v3/api/v1, /openapi/v3/apis/{group}/{version}
//                                   paths, verbs and kinds (x-kubernetes-group-version-kind)
//                                   of every served resource; PATCH declares fieldValidation,
//                                   so kubectl leaves validation to the server
//   GET /openapi/v2                 Swagger 2.0, as JSON or, when asked as kubectl asks, as
//                                   the protocol buffer encoding of gnostic's openapi_v2
//
// Pod, batch/v1 Job, Volcano's Job, Kubeflow's PyTorchJob, MPIJob and TFJob, and Kueue's
// ClusterQueue, LocalQueue and ResourceFlavor carry their fields' schemas in v3
// (api/kube_fields.h: the tables the server checks documents against), so that `kubectl explain
// pod.spec.containers` shows each field, its type and what Tessera does with it. The other kinds'
// schemas are open (x-kubernetes-preserve-unknown-fields), as are v2's: Tessera validates every
// field on the server (api/manifest.h) and answers unknown ones with a 400 naming them; kubectl,
// seeing fieldValidation served, leaves validation to the server.
#ifndef TESSERA_API_OPENAPI_H_
#define TESSERA_API_OPENAPI_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tessera::api {

nlohmann::json OpenApiV3Index();
// The document of one group version's path under /openapi/v3/ ("api/v1", "apis/batch/v1");
// null for one not served.
nlohmann::json OpenApiV3(std::string_view gv_path);
// Swagger 2.0 of every served path.
nlohmann::json OpenApiV2();
// OpenApiV2's title and version in gnostic's openapi_v2.Document protobuf encoding, which
// kubectl's client-side validation reads (no definitions: kinds absent from it are left to the
// server).
std::string OpenApiV2Protobuf();
// Whether an Accept header asks for the protobuf encoding.
bool WantsProtobuf(std::string_view accept);

}  // namespace tessera::api

#endif  // TESSERA_API_OPENAPI_H_
