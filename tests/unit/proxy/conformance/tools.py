# ruff: noqa: E501
"""Tool schemas the peers' parser tests declare (data, transcribed): name → parameters schema."""

from __future__ import annotations

from typing import Any

WEATHER = {"type": "object", "properties": {
    "city": {"type": "string"}, "state": {"type": "string"},
    "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}}, "required": ["city", "state"]}
AREA = {"type": "object", "properties": {
    "shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}}}
TYPES = {"type": "object", "properties": {
    "int_param": {"type": "integer"}, "float_param": {"type": "float"}, "bool_param": {"type": "boolean"},
    "str_param": {"type": "string"}, "obj_param": {"type": "object"}}}
ANYOF = {"type": "object", "properties": {
    "anyof_int": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
    "anyof_str": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "anyof_array": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
    "anyof_obj": {"anyOf": [{"type": "object"}, {"type": "null"}]},
    "type_as_array": {"type": ["integer", "null"]},
    "multi_non_null": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}}}
SEARCH_WEB = {"type": "object", "properties": {
    "query": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
    "verbose": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}}}
WRITE_FILE = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}

TOOLSETS: dict[str, dict[str, dict[str, Any]]] = {
    "none": {},
    "vllm_sample": {"get_current_weather": WEATHER, "calculate_area": AREA},
    "vllm_types": {"test_types": TYPES},
    "vllm_anyof": {"test_anyof": ANYOF},
    "vllm_search_web": {"search_web": SEARCH_WEB},
    "vllm_update_record": {"update_record": {"type": "object", "properties": {
        "data": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}},
    "vllm_greet": {"greet": {"type": "object", "properties": {"message": {"type": "string"}}}},
    "vllm_pick": {"pick": {"type": "object", "properties": {"items": {"type": "array"}}}},
    "vllm_weather": {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}},
    "vllm_search": {"search": {"type": "object", "properties": {"query": {"type": "string"}}}},
    "vllm_set_code": {"set_code": {"type": "object", "properties": {
        "code": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}},
    "vllm_set_count": {"set_count": {"type": "object", "properties": {
        "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}},
    "vllm_set_value": {"set_value": {"type": "object", "properties": {
        "optional": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}},
    "vllm_process": {"process": {"type": "object", "properties": {
        "name": {"type": "string"}, "data": {"type": "object"}}}},
    "vllm_write_file": {"write_file": WRITE_FILE},
    "vllm_log": {"log": {"type": "object", "properties": {"msg": {"type": "string"}}}},
    "sglang_coder": {
        "get_current_weather": {"type": "object", "properties": {
            "location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"}}, "required": ["location"]},
        "sql_interpreter": {"type": "object", "properties": {"query": {"type": "string"}, "dry_run": {"type": "boolean"}}},
        "TodoWrite": {"type": "object", "properties": {"todos": {"type": "array", "items": {"type": "object", "properties": {
            "content": {"type": "string"}, "status": {"type": "string"}}, "required": ["content", "status"]}}}}},
    "sglang_weather": {"get_weather": {"type": "object", "properties": {}}},
    "ours_edit": {"edit": {"type": "object", "properties": {
        "path": {"type": "string"}, "body": {"type": "string"}, "line": {"type": "integer"},
        "force": {"type": "boolean"}, "ratio": {"type": "number"}, "items": {"type": "array"},
        "opts": {"oneOf": [{"type": "object"}, {"type": "null"}]},
        "nested": {"type": "object", "properties": {"x": {"type": "object"}}}}}},
    "sglang_weather_days": {"get_weather": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}},
    "sglang_weather_search": {
        "get_weather": {"type": "object", "properties": {"city": {"type": "string"},
                                                         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}},
        "search": {"type": "object", "properties": {"query": {"type": "string"}}}},
    "sglang_time_weather": {"get_time": {"type": "object", "properties": {}},
                            "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}},
    "sglang_lookup_number": {"lookup": {"type": "object", "properties": {"value": {"type": "number"}}}},
    "sglang_lookup_nullable_number": {"lookup": {"type": "object", "properties": {
        "value": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}},
    "sglang_lookup_integer": {"lookup": {"type": "object", "properties": {"value": {"type": "integer"}}}},
    "sglang_lookup_string": {"lookup": {"type": "object", "properties": {"value": {"type": "string"}}}},
}
