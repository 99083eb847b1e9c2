"""What happens to whole traces, in the agent (``tooltrail.live``) and in the receiver
(``tooltrail.serve``) alike: the trace buffer, its sinks, the inline evaluator, evaluation
events. Nothing here tags spans or installs anything: that is ``live``'s."""
