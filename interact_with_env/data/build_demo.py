"""Regenerates demo_envs.jsonl / demo_scenarios.jsonl from clinic_env.py.

Run: .venv/bin/python -m interact_with_env.data.build_demo
"""

from pathlib import Path

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ToolCall

HERE = Path(__file__).parent
STATE = {
    "patients": {
        "P1": {"patient_id": "P1", "name": "Maria Lopez", "phone": "555-0101"},
        "P2": {"patient_id": "P2", "name": "John Smith", "phone": "555-0102"},
    },
    "doctors": {
        "D1": {"doctor_id": "D1", "name": "Dr. Chen", "specialty": "cardiology"},
        "D2": {"doctor_id": "D2", "name": "Dr. Okafor", "specialty": "dermatology"},
    },
    "slots": {
        "S1": {"slot_id": "S1", "doctor_id": "D1", "date": "2026-12-01", "time": "09:00", "is_booked": False},
        "S2": {"slot_id": "S2", "doctor_id": "D1", "date": "2026-12-01", "time": "10:00", "is_booked": True},
        "S3": {"slot_id": "S3", "doctor_id": "D1", "date": "2026-12-02", "time": "09:00", "is_booked": False},
        "S4": {"slot_id": "S4", "doctor_id": "D2", "date": "2026-12-01", "time": "11:00", "is_booked": False},
    },
    "appointments": {"A001": {"appointment_id": "A001", "patient_id": "P2", "slot_id": "S2", "status": "booked"}},
}


def check(body: str) -> str:
    return "def check_func(final_state):\n    " + body


def build() -> None:
    env = EnvSpec(
        id="clinic",
        env_class_name="ClinicAppointmentSystem",
        status="accepted",
        env_class_code=(HERE / "clinic_env.py").read_text(),
        environment_summary="Clinic appointment booking",
        environment_introduction="Patients book, look up and cancel appointments with the clinic's doctors.",
        constraints_rules=["A slot holds at most one booked appointment.", "Cancelling an appointment frees its slot."],
    )
    book = Scenario(
        id="clinic-book",
        env_id="clinic",
        env_class_name=env.env_class_name,
        init_config=STATE,
        status="proven",
        task="Book Maria Lopez the earliest free cardiology appointment on 2026-12-01.",
        checklist_with_func=[
            ChecklistItem(
                check_item="Maria (P1) has a booked appointment in slot S1",
                check_func=check(
                    "return any(a['patient_id'] == 'P1' and a['slot_id'] == 'S1' and "
                    "a['status'] == 'booked' for a in final_state['appointments'].values())"
                ),
            ),
            ChecklistItem(
                check_item="Slot S1 is marked booked",
                check_func=check("return final_state['slots']['S1']['is_booked'] is True"),
            ),
            ChecklistItem(
                check_item="No other slot changed",
                check_func=check(
                    "return all(final_state['slots'][s] == initial_state['slots'][s] for s in ('S2', 'S3', 'S4'))"
                ),
            ),
        ],
        reference_solution=[
            ToolCall(name="find_patient", arguments={"name": "Maria Lopez"}),
            ToolCall(name="list_doctors", arguments={"specialty": "cardiology"}),
            ToolCall(name="list_free_slots", arguments={"doctor_id": "D1", "date": "2026-12-01"}),
            ToolCall(name="book_appointment", arguments={"patient_id": "P1", "slot_id": "S1"}),
        ],
    )
    move = Scenario(
        id="clinic-reschedule",
        env_id="clinic",
        env_class_name=env.env_class_name,
        init_config=STATE,
        status="proven",
        task="John Smith cannot make his cardiology appointment on 2026-12-01. Cancel it and book him "
        "the free cardiology slot on 2026-12-02 instead.",
        checklist_with_func=[
            ChecklistItem(
                check_item="Appointment A001 is cancelled",
                check_func=check("return final_state['appointments']['A001']['status'] == 'cancelled'"),
            ),
            ChecklistItem(
                check_item="Slot S2 is free again",
                check_func=check("return final_state['slots']['S2']['is_booked'] is False"),
            ),
            ChecklistItem(
                check_item="John (P2) is booked in slot S3",
                check_func=check(
                    "return any(a['patient_id'] == 'P2' and a['slot_id'] == 'S3' and "
                    "a['status'] == 'booked' for a in final_state['appointments'].values())"
                ),
            ),
        ],
        reference_solution=[
            ToolCall(name="cancel_appointment", arguments={"appointment_id": "A001"}),
            ToolCall(name="book_appointment", arguments={"patient_id": "P2", "slot_id": "S3"}),
        ],
    )
    (HERE / "demo_envs.jsonl").write_text(env.model_dump_json() + "\n")
    (HERE / "demo_scenarios.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in (book, move)))


if __name__ == "__main__":
    build()
