#include "store/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <vector>

#include "store/etcd_wire.h"

namespace tessera::store {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using nlohmann::json;

namespace {

// ---- JSON to message ----

Status Wrong(const FieldDescriptor* f, const char* expected) {
  return InvalidArgument("field " + std::string(f->full_name()) + ": expected " + expected);
}

// An integer field's value: a JSON number, or a string of one (as the mapping writes 64 bits).
template <typename Int>
Result<Int> IntOf(const FieldDescriptor* f, const json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<Int>::max())) return Wrong(f, "an integer");
      return static_cast<Int>(u);
    }
    const int64_t i = v.get<int64_t>();
    if (i < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
        (i > 0 &&
         static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<Int>::max()))) {
      return Wrong(f, "an integer in range");
    }
    return static_cast<Int>(i);
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    Int out{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return out;
  }
  return Wrong(f, "an integer");
}

// One value of `f` (an element when repeated) into `m`.
Status PutOne(Message* m, const FieldDescriptor* f, const json& v) {
  const Reflection* r = m->GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      auto x = IntOf<int32_t>(f, v);
      if (!x.ok()) return x.status();
      rep ? r->AddInt32(m, f, *x) : r->SetInt32(m, f, *x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      auto x = IntOf<int64_t>(f, v);
      if (!x.ok()) return x.status();
      rep ? r->AddInt64(m, f, *x) : r->SetInt64(m, f, *x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      auto x = IntOf<uint32_t>(f, v);
      if (!x.ok()) return x.status();
      rep ? r->AddUInt32(m, f, *x) : r->SetUInt32(m, f, *x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      auto x = IntOf<uint64_t>(f, v);
      if (!x.ok()) return x.status();
      rep ? r->AddUInt64(m, f, *x) : r->SetUInt64(m, f, *x);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      if (!v.is_number()) return Wrong(f, "a number");
      const double x = v.get<double>();
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
        rep ? r->AddDouble(m, f, x) : r->SetDouble(m, f, x);
      } else {
        rep ? r->AddFloat(m, f, static_cast<float>(x)) : r->SetFloat(m, f, static_cast<float>(x));
      }
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      if (!v.is_boolean()) return Wrong(f, "true or false");
      rep ? r->AddBool(m, f, v.get<bool>()) : r->SetBool(m, f, v.get<bool>());
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      int number = 0;
      if (v.is_string()) {
        const auto* e = f->enum_type()->FindValueByName(v.get_ref<const std::string&>());
        if (e == nullptr) return Wrong(f, "a value of its enum");
        number = e->number();
      } else {
        auto x = IntOf<int32_t>(f, v);
        if (!x.ok()) return x.status();
        number = *x;
      }
      rep ? r->AddEnumValue(m, f, number) : r->SetEnumValue(m, f, number);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      if (!v.is_string()) return Wrong(f, "a string");
      std::string x = v.get<std::string>();
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        auto bytes = Unbase64(x);
        if (!bytes.ok()) return Wrong(f, "base64");
        x = std::move(bytes).value();
      }
      rep ? r->AddString(m, f, std::move(x)) : r->SetString(m, f, std::move(x));
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      if (!v.is_object()) return Wrong(f, "an object");
      Message* sub = rep ? r->AddMessage(m, f) : r->MutableMessage(m, f);
      return JsonToMessage(v, sub);
    }
  }
  return Wrong(f, "a supported type");
}

Status SetValue(Message* m, const FieldDescriptor* f, const json& v) {
  if (v.is_null()) return Status::Ok();
  if (f->is_map()) return Wrong(f, "no map (not supported)");
  if (!f->is_repeated()) return PutOne(m, f, v);
  if (!v.is_array()) return Wrong(f, "an array");
  for (const json& e : v) TESSERA_RETURN_IF_ERROR(PutOne(m, f, e));
  return Status::Ok();
}

// ---- message to JSON ----

json OneValue(const Message& m, const FieldDescriptor* f, int index);

json FieldValue(const Message& m, const FieldDescriptor* f) {
  if (!f->is_repeated()) return OneValue(m, f, -1);
  json out = json::array();
  const int n = m.GetReflection()->FieldSize(m, f);
  for (int i = 0; i < n; ++i) out.push_back(OneValue(m, f, i));
  return out;
}

// `f`'s value (element `index` when repeated, else -1).
json OneValue(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f);
    case FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
      const auto* e = f->enum_type()->FindValueByNumber(number);
      return e ? json(e->name()) : json(number);
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& s = rep ? r->GetRepeatedStringReference(m, f, index, &scratch)
                                 : r->GetStringReference(m, f, &scratch);
      return f->type() == FieldDescriptor::TYPE_BYTES ? Base64(s) : s;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageToJson(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f));
  }
  return nullptr;
}

}  // namespace

Status JsonToMessage(const json& in, Message* out) {
  out->Clear();
  if (!in.is_object()) {
    return InvalidArgument("message " + std::string(out->GetDescriptor()->full_name()) +
                           ": expected an object");
  }
  const Descriptor* d = out->GetDescriptor();
  for (const auto& [name, value] : in.items()) {
    const FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr) f = d->FindFieldByCamelcaseName(name);
    if (f == nullptr) {
      return InvalidArgument("message " + std::string(d->full_name()) + " has no field \"" + name +
                             "\"");
    }
    TESSERA_RETURN_IF_ERROR(SetValue(out, f, value));
  }
  return Status::Ok();
}

json MessageToJson(const Message& in) {
  json out = json::object();
  std::vector<const FieldDescriptor*> fields;
  in.GetReflection()->ListFields(in, &fields);  // the set ones, by number
  for (const FieldDescriptor* f : fields) out[f->name()] = FieldValue(in, f);
  return out;
}

}  // namespace tessera::store
