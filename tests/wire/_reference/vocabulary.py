"""The fixed vocabulary of the provider APIs: field names and enum values.

Only constants belong here, never a value a client could make up: a string
that is a member of one of these sets cannot be a secret, so the adapters
leave it out of the segment list (see :mod:`gateway.wire.generic`). Anything
else the client sends is scanned. A word missing here costs one small segment,
never a miss, so the lists need not be complete.

Taken from the request types of the official SDKs (openai 3.57, anthropic
2.15): the keys of the TypedDicts of chat completions, responses,
conversations, assistants/threads, batches, embeddings, moderations and
(beta) messages, and the string values of their ``Literal`` types, less model
names and beta header names; plus JSON Schema keywords and formats, and
Bedrock Converse's field names and values and the ``anthropic_version`` of
Bedrock and Vertex AI.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Object keys: field names of the provider APIs and JSON Schema.
NAMES = _words(
    """
additionalModelRequestFields additionalModelResponseFieldPaths bucketOwner cachePoint
citationsContent guardContent guardrailConfig guardrailIdentifier guardrailVersion
inferenceConfig inputSchema maxTokens modelId performanceConfig promptVariables
reasoningContent reasoningText redactedContent requestMetadata s3Location stopSequences
toolChoice toolConfig toolResult toolSpec toolUse toolUseId topP json document video
$comment $defs $id $ref $schema access_programs access_type account_status
acknowledged_safety_checks action actions active additionalProperties additional_instructions
additional_messages after after_id allOf allow_mcp_servers allow_package_managers
allowed_callers allowed_domains allowed_hosts allowed_tools always amount anchor annotations
anyOf approval_request_id approve approximate apt arguments assistant_id async attachments
attributes audio authorization authorization_token background background_options before
before_id best_of betas bill_to billing_policy block_binding blocked_domains body budget_tokens
button bytes cache_control caching call_id caller caller_id cargo categories
chunk_overlap_tokens chunking_strategy citations cited_text city clear_at clear_at_least
clear_tool_inputs client_tool_results close_tab code code_interpreter command commands
compact_threshold compaction comparison_response_id completion_window complexity configs
connector_id const container container_id content contentEncoding contentMediaType context
context_compression context_management continuation_id conversation conversation_id country
created_at_gt created_at_lt currency cursor_position custom custom_id cyber data default
default_config defer_loading definition definitions deprecated description detail diagnostics
diff dimensions disable_parallel_tool_use display display_height display_height_px display_name
display_number display_width display_width_px document_index document_title domain
domain_secrets double_click download_id eager_input_streaming echo edits effort else email_hash
embedding_weight enable_zoom enabled encoding_format encrypted_content encrypted_index
encrypted_stdout end_block_index end_char_index end_index end_page_number endpoint
enforcement_status entity_type enum env environment error error_code error_message example
examples exclude_tools exclusiveMaximum exclusiveMinimum execution exit_code expires_in_seconds
external_user_details external_web_access fallback_credit_token fallbacks file file_data file_id
file_ids file_search file_type file_upload file_url filename files filters find fingerprint
form_input format frame_count frame_duration_ms frequency_penalty from function function_call
functions gem generate generate_summary get_page_text go grammar headers hold_key hover
hybrid_search id ids if image image_file image_url include include_archived include_obfuscation
include_usage index inference_geo input input_audio input_examples input_fidelity input_file_id
input_image_mask input_schema input_tokens inputs instructions is_error is_file_update items
javascript_exec json_schema keep key keys last_messages left_click left_click_drag
left_mouse_down left_mouse_up lifecycle limit lines list_tabs logit_bias logprob logprobs logs
maxItems maxLength maxProperties max_characters max_chunk_size_tokens max_completion_tokens
max_content_tokens max_num_results max_output_length max_output_tokens max_prompt_tokens
max_tokens max_tool_calls max_uses maximum mcp_server_name mcp_servers media_type memory_limit
memory_store_id message messages metadata method middle_click minItems minLength minProperties
minimum modalities mode model moderation moderation_details moderation_stage mouse_move
multipleOf n name name_hash namespace navigate network_policy networking never new_lines
new_start new_tab not npm nullable num_lines old_lines old_start onboarded_at oneOf operation
order order_by outcome output output_behavior output_compression output_config
output_expires_after output_format output_schema output_tokens outputs oversized_image packages
page page_age parallel_tool_calls param parameters params partial_images path pattern
patternProperties pause_after_compaction pending_safety_checks personality phase pip policy
prediction prefixItems prefix_mismatch_behavior presence_penalty previous_message_id
previous_response_id prewarm prompt prompt_cache_breakpoint prompt_cache_key
prompt_cache_options prompt_cache_retention properties propertyNames purpose quality queries
query ranker ranking_options readOnly read_console read_network read_only read_page reason
reasoning reasoning_content reasoning_effort reasoning_tokens reference_id refusal region
remaining requests require_approval required response_format response_inclusion result results
retrieved_at return_code revised_prompt right_click role run_id safety_identifier schema score
score_threshold screenshot scroll scroll_to scroll_x scroll_y search_content_types
search_context_size search_result_index seconds seed server_description server_label server_name
server_tool_results server_url service_tier session_ids signature size size_bytes skill_id
skills source sources speed start_block_index start_char_index start_index start_line
start_page_number starting_after state_changes static status statuses stderr stdout stop
stop_reason stop_sequences store stream stream_id stream_options strict suffix summary svg
svg_usage switch_tab syntax system tab_id tabs task_budget temperature text text_weight then
thinking thread thread_id timeout_ms timezone title to token tool tool_call_id tool_calls
tool_changes tool_choice tool_configuration tool_id tool_name tool_names tool_outputs
tool_references tool_resources tool_use_id tools toolset_name top_logprobs top_p total
total_lines total_tokens transformations trigger triple_click truncation truncation_strategy ttl
tunnel_id type uniqueItems url url_sources use_cache user user_id user_input user_location
user_profile_id value variables vector_store_ids vector_stores verbosity version voice wait
web_search_options working_directory workspace_id writeOnly x y zoom
"""
)

# Values of enum-typed fields: types, roles, statuses, formats, options.
WORDS = _words(
    """
bedrock-2023-05-31 vertex-2023-10-16 success error txt csv doc docx xls xlsx md three_gp
/v1/chat/completions /v1/completions /v1/embeddings /v1/images/edits /v1/images/generations
/v1/moderations /v1/responses /v1/videos 1024x1024 1024x1536 12h 1536x1024 16g 1g 1h 24h 2h 30m
4g 5m 64g 8h GET POST USD aac active adaptive additional_tools advisor advisor_20260301
advisor_redacted_result advisor_result advisor_tool_result advisor_tool_result_error all
all_turns allowed_tools allowlist alloy always and anthropic any application application/json
application/pdf application/zip apply_patch apply_patch_call apply_patch_call_output approximate
array asc ash assistant audio auto back ballad banned base64 bash bash_20241022 bash_20250124
bash_code_execution bash_code_execution_output bash_code_execution_result
bash_code_execution_tool_result bash_code_execution_tool_result_error best_effort between_tools
billing_policy block blocked boolean browser browser_state browser_toolset_20260801 business
calling canceled cedar char_location chat.completion clear_thinking_20251015
clear_tool_uses_20250919 click client cloud code_execution code_execution_20250522
code_execution_20250825 code_execution_20260120 code_execution_20260521 code_execution_output
code_execution_result code_execution_tool_result code_execution_tool_result_error
code_interpreter code_interpreter_call code_interpreter_call.outputs commentary compact_20260112
compaction compaction_trigger completed computer computer_20241022 computer_20250124
computer_20251124 computer_call computer_call_output computer_call_output.output.image_url
computer_screenshot computer_toolset_20260801 computer_use computer_use_preview concise
configuration_update connector_dropbox connector_gmail connector_googlecalendar
connector_googledrive connector_microsoftteams connector_outlookcalendar connector_outlookemail
connector_sharepoint container_auto container_file_citation container_reference container_upload
content content_block_location content_too_large continue coral create create_file create_new
created_at current_turn custom custom_tool_call custom_tool_call_output date date-time
daybreak_blue daybreak_red default default_2024_08_21 delete_file deprecated desc detailed
developer direct disabled document double_click download_completed download_failed
download_started downsize drag drop_block duration echo edit email enabled
encrypted_code_execution_result ephemeral eq error except excluded exec execution_time_exceeded
exit explicit failed fallback fast file file_citation file_not_found file_path file_search
file_search_call file_search_call.results final_answer find_in_page flac flex float forward
friendly full function function_call function_call_output generate generating gif government
grammar gt gte high hostname http_error idn-email idn-hostname image image/gif image/jpeg
image/png image/webp image_file image_generation image_generation_call image_url implicit in
in_memory in_progress incomplete individual inline input input_audio input_file input_image
input_text input_tokens integer interpreting invalid_tool_input ipv4 ipv6 iri iri-reference
item_reference jpeg json-pointer json_object json_schema keypress lark last_messages left
limited linux local local_shell local_shell_call local_shell_call_output logs low lt lte mac
marin max max_uses_exceeded mcp mcp_approval_request mcp_approval_response mcp_call
mcp_list_tools mcp_protocol_error mcp_tool_execution_error mcp_tool_listing mcp_tool_reference
mcp_tool_result mcp_tool_use mcp_toolset mcp_toolset_reference medium memory memory_20250818
memory_store message message.input_image.image_url message.output_text.logprobs minimal
model_not_found move mp3 name namespace ne never next_user_message nin non_profit none null
number object omitted only opaque open_page opus or original output output_file_too_large
output_text overloaded packages page_location passthrough pcm16 pdf pending png pragmatic
priority pro program program_output programmatic programmatic_tool_calling prompt_too_long
query_too_long reasoning reasoning.encrypted_content reasoning_text redacted_thinking refusal
regex relative-json-pointer request_too_large required response response.create response.steer
restricted retired right running sage scale score screenshot scroll search search_result
search_result_location searching self self_hosted server server_tool_use sessions shell
shell_call shell_call_output shimmer skill_reference soonest standard standard_only static
step_details.tool_calls[*].file_search.results[*].content str_replace_based_edit_tool
str_replace_editor strict string summarize summarized summary_text suspended svg system
tab_opened text text/csv text/html text/markdown text/plain text_editor_20241022
text_editor_20250124 text_editor_20250429 text_editor_20250728 text_editor_code_execution
text_editor_code_execution_create_result text_editor_code_execution_str_replace_result
text_editor_code_execution_tool_result text_editor_code_execution_tool_result_error
text_editor_code_execution_view_result thinking thinking_turns time timeout tokens
too_many_requests tool tool_addition tool_definition tool_reference tool_removal tool_result
tool_search tool_search_call tool_search_output tool_search_tool_bm25
tool_search_tool_bm25_20251119 tool_search_tool_regex tool_search_tool_regex_20251119
tool_search_tool_result tool_search_tool_result_error tool_search_tool_search_result tool_use
tool_uses transparent type ubuntu ultrafast unavailable unknown unrestricted
unsupported_content_type update_existing update_file updates uri uri-reference uri-template url
url_citation url_not_accessible url_not_allowed url_not_in_prior_context url_too_long user
user_profile uuid verse wait wav web_fetch web_fetch_20250910 web_fetch_20260209
web_fetch_20260309 web_fetch_20260318 web_fetch_result web_fetch_tool_result
web_fetch_tool_result_error web_search web_search_20250305 web_search_2025_08_26
web_search_20260209 web_search_20260318 web_search_call web_search_call.action.sources
web_search_call.results web_search_preview web_search_preview_2025_03_11 web_search_result
web_search_result_location web_search_tool_result web_search_tool_result_error webp wheel
windows xhigh
"""
)
